"""Kubernetes resource quantities: strict parsing to Decimal and canonical formatting.

The grammar is Kubernetes' own (``k8s.io/apimachinery/pkg/api/resource``): a signed decimal
number followed by a binary-SI suffix (``Ki`` .. ``Ei``), a decimal-SI suffix (``n`` .. ``E``)
or a decimal exponent (``e3``, ``E-2``). Values are exact ``Decimal`` so quota arithmetic never
rounds.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal, InvalidOperation

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_QUANTITY = re.compile(
    r"^(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)

Quantity = Decimal
"""An exact amount of a resource: CPUs (cores), bytes, GPUs, or a count."""


class QuantityError(ValueError):
    """A value that is not a valid Kubernetes quantity."""


def parse_quantity(value: str | int | float | Decimal) -> Decimal:
    """Parse ``value`` as a Kubernetes quantity: ``"500m"``, ``"1.5"``, ``"8Gi"``, ``"1e3"``, ``2``.

    Raises ``QuantityError`` with a message that shows the accepted forms.
    """
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, Decimal | int):
        return Decimal(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            raise QuantityError(f"{value!r} is not a finite quantity")
        return Decimal(repr(value))
    if not isinstance(value, str):
        raise QuantityError(f"{value!r} is not a quantity")
    match = _QUANTITY.fullmatch(value)
    if match is None:
        raise QuantityError(
            f"{value!r} is not a Kubernetes quantity "
            "(examples: '2', '500m', '1.5', '8Gi', '512Mi', '1e3')"
        )
    try:
        number = Decimal(match["number"])
    except InvalidOperation as err:  # pragma: no cover - the regex admits only decimals
        raise QuantityError(f"{value!r} is not a Kubernetes quantity") from err
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix in _DECIMAL:
        return number * _DECIMAL[suffix]
    return number.scaleb(int(suffix[1:]))


def format_quantity(value: Decimal | int, binary: bool | None = None) -> str:
    """Format ``value`` the way Kubernetes prints a canonical quantity.

    Whole numbers that are exact multiples of 1024 use binary suffixes when ``binary`` is true
    (or, with ``binary=None``, when the value is at least 1Ki and divisible by it: byte counts).
    Fractions use ``m``, ``u`` or ``n``; anything finer is rounded up to ``n`` as Kubernetes does.
    """
    value = Decimal(value)
    sign = "-" if value < 0 else ""
    value = abs(value)
    if value == value.to_integral_value():
        whole = int(value)
        use_binary = binary if binary is not None else (whole >= 1024 and whole % 1024 == 0)
        if use_binary and whole:
            for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
                if whole % _BINARY[suffix] == 0:
                    return f"{sign}{whole // _BINARY[suffix]}{suffix}"
        if not use_binary and whole:
            for suffix in ("E", "P", "T", "G", "M", "k"):
                scale = int(_DECIMAL[suffix])
                if whole % scale == 0 and whole // scale < 1000 and whole >= scale:
                    return f"{sign}{whole // scale}{suffix}"
        return f"{sign}{whole}"
    for suffix in ("m", "u", "n"):
        scaled = value / _DECIMAL[suffix]
        if scaled == scaled.to_integral_value():
            return f"{sign}{int(scaled)}{suffix}"
    # Round up, as Kubernetes does: never report less than is there.
    return f"{sign}{math.ceil(value / _DECIMAL['n'])}n"
