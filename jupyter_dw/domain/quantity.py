"""Kubernetes resource quantities: strict parsing to Decimal and canonical formatting.
Kubernetes' grammar and values, checked against ``resource.ParseQuantity``; the spellings it
accepts that are refused here, and why: docs/explanation/architecture.md.
"""

from __future__ import annotations

import math
import re
from decimal import MAX_EMAX, MIN_EMIN, ROUND_UP, Context, Decimal, InvalidOperation

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

MAX_QUANTITY = Decimal(2**63 - 1)
"""Kubernetes' largest binary quantity (``maxAllowed``) and an int64's; we refuse larger ones."""
NANO = Decimal("1e-9")
"""Kubernetes' finest step: smaller amounts are rounded up to it."""
_EXPONENT_DIGITS = 9
"""The longest exponent read (after leading zeros); Kubernetes wraps longer ones to 32 bits."""

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
    if isinstance(value, Decimal | int | float):
        number = Decimal(repr(value)) if isinstance(value, float) else Decimal(value)
        if not number.is_finite():
            raise QuantityError(f"{value!r} is not a finite quantity")
        return _bounded(number, 0, value)
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
        return _bounded(number, 0, value, factor=_BINARY[suffix])
    if suffix in _DECIMAL:
        return _bounded(number, _DECIMAL[suffix].adjusted(), value)
    # Leading zeros are dropped before the digits are counted or converted ("e000...01").
    digits = suffix[1:].lstrip("+-").lstrip("0") or "0"
    if len(digits) > _EXPONENT_DIGITS:
        raise QuantityError(f"{value!r}: the exponent is too large for a Kubernetes quantity")
    exponent = -int(digits) if suffix[1] == "-" else int(digits)
    return _bounded(number, exponent, value)


def _bounded(number: Decimal, exponent: int, shown: object, factor: int = 1) -> Decimal:
    """``number * factor * 10**exponent`` rounded up to a nano, or :class:`QuantityError` if
    it is more than :data:`MAX_QUANTITY`. Exact whatever the size of its parts: the scale is
    checked before anything is computed, and the product is computed with every digit."""
    if number.is_zero():
        return Decimal(0)
    # adjusted(): the power of ten of the leading digit (2**63 has 19 digits); the product's
    # is the sum of its factors', or one more.
    scale = number.adjusted() + exponent + Decimal(factor).adjusted()
    if scale > 19:
        raise _too_large(shown)
    if scale < -11:  # below 1n: Kubernetes makes it 1n
        return NANO.copy_sign(number)
    exact = Context(prec=len(number.as_tuple().digits) + 40, Emax=MAX_EMAX, Emin=MIN_EMIN)
    product = exact.multiply(number, factor).scaleb(exponent, context=exact)
    amount = product.quantize(NANO, ROUND_UP, context=exact)
    if abs(amount) > MAX_QUANTITY:
        raise _too_large(shown)
    # The plainest spelling of the value: 100 (not 1E+2), 0.5 (not 0.500000000).
    if amount == amount.to_integral_value():
        return Decimal(int(amount))
    return amount.normalize(context=exact)


def _too_large(shown: object) -> QuantityError:
    return QuantityError(
        f"{shown!r} is larger than Kubernetes' largest quantity ({MAX_QUANTITY}, about 8Ei)"
    )


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
