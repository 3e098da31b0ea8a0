"""The quantity parser against Kubernetes' own: ``resource.ParseQuantity`` from the apimachinery
release the test bed's Kubernetes is built with, run as one long-lived process
(``tests/cluster/go/quantity-oracle``, built once by ``tests/cluster/build.sh quantity-oracle``
into ``~/.cache/jupyter-dw/bin``; Go is needed, no control plane).

Both directions, with exact values: what we accept, Kubernetes accepts with the same value; what
Kubernetes accepts, we accept with the same value, except the spellings
``jupyter_dw.domain.quantity`` refuses on purpose, each recognised here from Kubernetes' own
answer (:func:`refused_on_purpose`).
"""

from __future__ import annotations

import re
import string
import time
from collections.abc import Iterator
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_dw.domain.quantity import (
    MAX_QUANTITY,
    QuantityError,
    format_quantity,
    parse_quantity,
)
from tests.cluster.quantity_oracle import QuantityOracle, Verdict

BATCHES = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=300,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@pytest.fixture(scope="module")
def kubernetes() -> Iterator[QuantityOracle]:
    with QuantityOracle() as oracle:
        yield oracle


def ours(text: str) -> Decimal | None:
    try:
        return parse_quantity(text)
    except QuantityError:
        return None


_MANTISSA = re.compile(r"[+-]?([0-9]*)\.?([0-9]*)")
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")


def refused_on_purpose(text: str, theirs: Decimal) -> str | None:
    """Why we may refuse ``text``, which Kubernetes reads as ``theirs``; None if we may not.

    The reasons are quantity.py's (docs/explanation/architecture.md, "Quantities"), each told
    from Kubernetes' answer, not ours."""
    if theirs.copy_abs() >= MAX_QUANTITY:
        return "too large"  # capped to 2**63-1 (binary suffixes) or kept whole (1e30)
    mantissa = _MANTISSA.match(text)
    assert mantissa is not None  # the pattern matches the empty prefix
    if theirs == 0 and not any(mantissa.groups()):
        return "no digits"  # ".", "+", "M", "e5" are zero to Kubernetes
    exponent = _EXPONENT.fullmatch(text, mantissa.end())
    if exponent and abs(int(exponent[1])) >= 10**9:
        return "exponent of ten digits or more"  # Kubernetes wraps it to 32 bits
    return None


def assert_agree(text: str, theirs: Verdict) -> None:
    mine = ours(text)
    if mine is not None:
        assert theirs.accepted, f"{text!r}: we read {mine}, Kubernetes refuses ({theirs.error})"
        assert mine == theirs.value, f"{text!r}: we read {mine}, Kubernetes {theirs.value}"
    elif theirs.accepted:
        assert theirs.value is not None
        assert refused_on_purpose(text, theirs.value), (
            f"{text!r}: we refuse it, Kubernetes reads {theirs.value}"
        )


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------

DECIMAL_SUFFIXES = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E"]
BINARY_SUFFIXES = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
NEAR_MISSES = ["K", "ki", "KI", "mi", "i", "Ki5", "EE", "Eii", "e", "E+", "e-", "x"]


def _slow_for_kubernetes(exponent: int) -> bool:
    """Exponents Kubernetes spends seconds to hours on, as it rounds the amount to a nano with
    all its digits (``1e-10000000``: 1 s; ``1e-30000000``: 17 s; ``1e-999999999``: hours).
    It wraps an exponent to 32 bits first; what we read these as is checked without it
    (:func:`test_what_kubernetes_takes_hours_over_we_answer_at_once`)."""
    wrapped = (exponent + 2**31) % 2**32 - 2**31
    return wrapped < -(10**6)


EXPONENT_VALUES = (
    st.integers(-40, 40)
    | st.integers(-(10**4), 10**6)
    | st.sampled_from(
        [
            -(10**6),
            10**9 - 1,
            10**9,
            2**31 - 1,
            2**32,
            -(2**32),
            2**32 + 3,
            -(2**32) + 5,
            2**63 - 1,
            -(2**63),
            2**63,
            10**30,
        ]
    )
).filter(lambda e: not _slow_for_kubernetes(e))
EXPONENT = st.builds(
    lambda e, sign, zeros, n: f"{e}{sign if n >= 0 else '-'}{'0' * zeros}{abs(n)}",
    st.sampled_from("eE"),
    st.sampled_from(["", "+"]),
    st.sampled_from([0, 0, 0, 1, 12]),
    EXPONENT_VALUES,
)
DIGITS = st.text(alphabet=string.digits, max_size=25) | st.builds(
    lambda head, zeros, tail: head + "0" * zeros + tail,
    st.text(alphabet=string.digits, max_size=3),
    st.integers(0, 3000),
    st.text(alphabet=string.digits, max_size=3),
)
NUMBER = st.builds(
    lambda sign, whole, dot, frac: sign + whole + dot + frac,
    st.sampled_from(["", "", "+", "-", "+-", "--"]),
    DIGITS,
    st.sampled_from(["", ".", ".", ".."]),
    DIGITS,
)
SUFFIX = (
    st.sampled_from(DECIMAL_SUFFIXES + BINARY_SUFFIXES)
    | EXPONENT
    | st.sampled_from(NEAR_MISSES)
    | st.builds(lambda a, b: a + b, st.sampled_from(BINARY_SUFFIXES), EXPONENT)
)
SPACE = st.sampled_from(["", "", "", "", " ", "\t", "\n", "\u00a0"])
GRAMMAR = st.builds(
    lambda before, number, suffix, after: before + number + suffix + after,
    SPACE,
    NUMBER,
    SUFFIX,
    SPACE,
)
"""Kubernetes' grammar, its edges and near misses: signs, leading zeros, dots, thousands of
digits, every suffix, exponents up to and past 64 bits, whitespace around."""


def _sendable(text: str) -> bool:
    """Not one of the exponents Kubernetes is too slow on (:func:`_slow_for_kubernetes`)."""
    exponent = re.search(r"[eE]([+-]?[0-9]+)$", text)
    if exponent is None or not -(2**63) <= int(exponent[1]) < 2**63:
        return True  # no exponent, or one Kubernetes refuses (strconv.ParseInt)
    return not _slow_for_kubernetes(int(exponent[1]))


JUNK = st.text(alphabet="0123456789.+-eEinumkKMGTPi x\n\u0661\u00b2", max_size=14) | st.text(
    max_size=8
)
BATCH = st.lists((GRAMMAR | JUNK).filter(_sendable), min_size=1, max_size=60)


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------


@BATCHES
@given(BATCH)
def test_we_accept_what_kubernetes_accepts_with_the_same_value(kubernetes, batch):
    for text, theirs in zip(batch, kubernetes.parse(batch), strict=True):
        assert_agree(text, theirs)


@BATCHES
@given(st.lists(GRAMMAR, max_size=30), st.sampled_from([None, True, False]))
def test_what_we_write_kubernetes_reads_as_the_same_value(kubernetes, batch, binary):
    values = [v for v in map(ours, batch) if v is not None]
    written = [format_quantity(value, binary) for value in values]
    for value, text, theirs in zip(values, written, kubernetes.parse(written), strict=True):
        assert theirs.value == value == parse_quantity(text), (value, text, theirs)


# --------------------------------------------------------------------------------------------
# The refusals on purpose, each shown against Kubernetes' answer
# --------------------------------------------------------------------------------------------

REFUSED_ON_PURPOSE = {
    "9Ei": "too large",  # capped by Kubernetes to 2**63-1
    "-8Ei": "too large",
    "1e30": "too large",  # kept whole by Kubernetes, beyond every int64 consumer
    "10000000000000000000": "too large",
    ".": "no digits",
    "+": "no digits",
    "-.k": "no digits",
    "M": "no digits",
    "e5": "no digits",
    "1e-4294967296": "exponent of ten digits or more",  # wrapped: 1 for Kubernetes
    "1e4294967297": "exponent of ten digits or more",  # wrapped: 10 for Kubernetes
    "0e1000000000": "exponent of ten digits or more",
}


def test_each_refusal_on_purpose_is_a_spelling_kubernetes_accepts(kubernetes):
    texts = list(REFUSED_ON_PURPOSE)
    for text, theirs in zip(texts, kubernetes.parse(texts), strict=True):
        assert ours(text) is None, text
        assert theirs.value is not None, f"{text!r}: Kubernetes refuses it too"
        assert refused_on_purpose(text, theirs.value) == REFUSED_ON_PURPOSE[text], text


def test_the_bounds_are_kubernetes_values(kubernetes):
    edges = ["9223372036854775807", "-9223372036854775807", "0.000000001", "1n", "0.1n"]
    edges += ["7Ei", "8191Pi", "1e-999999", "-1e-999999", "1e18", "9.223372036854775807E"]
    edges += ["1e" + "0" * 5000 + "3", "1" + "0" * 5000 + "e-5000", "0." + "0" * 5000 + "1"]
    for text, theirs in zip(edges, kubernetes.parse(edges), strict=True):
        assert ours(text) is not None, text
        assert_agree(text, theirs)


def test_what_kubernetes_takes_hours_over_we_answer_at_once():
    """Below 1n whatever the exponent (Kubernetes' value too, in the end); an exponent of ten
    digits is refused (Kubernetes wraps it, or overflows its scale and builds 10**(2**31))."""
    started = time.monotonic()
    assert ours("1e-999999999") == ours("-0.5e-999999990").copy_abs() == Decimal("1e-9")
    for text in ("1e-2147483648", "0.5e-2147483647", "1e2147483648", "1e-" + "9" * 5000):
        assert ours(text) is None, text
    assert time.monotonic() - started < 1
