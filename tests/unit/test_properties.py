"""Properties of the quantity parser and the cluster spec validator, checked with hypothesis on
generated input (derandomized: the same cases every run, no example database).

The quantity parser is compared with a line-by-line port of Kubernetes' own parser
(``resource.ParseQuantity`` in k8s.io/apimachinery v0.36: ``parseQuantityString``,
``suffixHandler.interpret``, the round-up to 1n and the cap at 2**63-1), written here
independently of ``jupyter_dw.domain.quantity``.
"""

from __future__ import annotations

import math
import re
import string
from decimal import Decimal
from fractions import Fraction
from typing import Any
from urllib.parse import quote

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jupyter_dw.domain.cluster_spec import (
    FIELDS,
    MAX_NAME_LENGTH,
    SpecError,
    SpecPolicy,
    ValidatedSpec,
    ray_cluster_name_error,
)
from jupyter_dw.domain.quantity import QuantityError, format_quantity, parse_quantity
from jupyter_dw.domain.validation import label_value_error
from tests.unit.test_cluster_spec import _rayclusters_v1_schema, unknown_fields

PROPERTY = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=400,
    suppress_health_check=[HealthCheck.too_slow],
)

# --------------------------------------------------------------------------------------------
# Kubernetes' quantity parser, ported
# --------------------------------------------------------------------------------------------

K8S_MAX = 2**63 - 1
_DEC = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BIN = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = "eEinumkKMGTP"


def k8s_parse(text: str) -> Fraction | None:
    """The value Kubernetes gives ``text``, or None where it answers an error."""
    if text == "":
        return None
    end, pos, positive = len(text), 0, True
    if text[0] in "+-":
        positive, pos = text[0] == "+", 1
    while pos < end and text[pos] == "0":  # leading zeros
        pos += 1
    if pos >= end:
        return Fraction(0)
    start = pos
    while pos < end and text[pos].isdigit() and text[pos].isascii():
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in string.digits:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end:
        if text[pos] in "+-":
            pos += 1
        while pos < end and text[pos] in string.digits:
            pos += 1
        if pos < end:
            return None  # ErrFormatWrong
    suffix = text[suffix_start:]
    if suffix in _DEC:
        base, exponent = 10, _DEC[suffix]
    elif suffix in _BIN:
        base, exponent = 2, _BIN[suffix]
    elif len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        if not re.fullmatch(r"[+-]?[0-9]+", digits) or not -(2**63) <= int(digits) < 2**63:
            return None  # strconv.ParseInt(..., 64) fails
        base, exponent = 10, (int(digits) + 2**31) % 2**32 - 2**31  # int32(parsed)
    else:
        return None  # ErrSuffix
    amount = Fraction(int(num + denom), 10 ** len(denom)) * Fraction(base) ** exponent
    if amount:  # rounded up to the next nano, away from zero
        amount = Fraction(math.ceil(amount * 10**9), 10**9)
    amount = min(amount, Fraction(K8S_MAX))
    return amount if positive else -amount


def test_long_spellings_are_parsed_or_refused_cleanly():
    """Sizes a fuzzer rarely reaches: thousands of digits in the number or the exponent."""
    assert parse_quantity("1e" + "0" * 5000 + "3") == 1000
    assert parse_quantity("1" + "0" * 5000 + "e-5000") == 1
    assert parse_quantity("0." + "0" * 5000 + "1") == Decimal("1e-9")  # rounded up to 1n
    for refused in ("1e" + "9" * 5000, "1" + "0" * 5000, "1e-" + "9" * 5000 + "x"):
        try:
            parse_quantity(refused)
        except QuantityError:
            continue
        raise AssertionError(f"{refused[:20]}... was accepted")


def test_the_port_agrees_with_kubernetes_documented_examples():
    """Control for :func:`k8s_parse`, from apimachinery's quantity_test.go."""
    assert k8s_parse("5Gi") == 5 * 2**30
    assert k8s_parse("0.1m") == Fraction(1, 10000)
    assert k8s_parse("1n") == Fraction(1, 10**9)
    assert k8s_parse("0.1n") == Fraction(1, 10**9)
    assert k8s_parse("1.G") == 10**9
    assert k8s_parse("-1e3") == -1000
    assert k8s_parse("9Ei") == K8S_MAX  # capped
    assert k8s_parse("M") == 0  # a quirk: no number at all
    for refused in ("1Ki5", "1ki", "1e", "1.2.3", " 1", "1 ", "5i", "1e9999999999999999999"):
        assert k8s_parse(refused) is None, refused


QUANTITY_TEXT = st.text(alphabet="0123456789.+-eEinumkKMGTPi x\n\u0661", max_size=12)
NUMBER = st.builds(
    lambda sign, whole, dot, frac: sign + whole + dot + frac,
    st.sampled_from(["", "+", "-"]),
    st.text(alphabet=string.digits, min_size=1, max_size=22),
    st.sampled_from(["", "."]),
    st.text(alphabet=string.digits, max_size=12),
) | st.builds(
    lambda sign, frac: f"{sign}.{frac}",
    st.sampled_from(["", "+", "-"]),
    st.text(alphabet=string.digits, min_size=1, max_size=12),
)
SUFFIX = st.sampled_from([*_DEC, *_BIN]) | st.builds(
    lambda e, sign, n: f"{e}{sign}{n}",
    st.sampled_from("eE"),
    st.sampled_from(["", "+", "-"]),
    st.integers(0, 40),
)
DOCUMENTED = st.builds(lambda number, suffix: number + suffix, NUMBER, SUFFIX)
"""Strings of Kubernetes' documented quantity grammar (with ``n`` and ``u``, which it
accepts too)."""


@PROPERTY
@given(QUANTITY_TEXT | DOCUMENTED)
def test_what_we_accept_kubernetes_accepts_with_the_same_value(text):
    try:
        ours = parse_quantity(text)
    except QuantityError:
        return
    theirs = k8s_parse(text)
    assert theirs is not None, text
    assert Fraction(ours) == theirs, text


@PROPERTY
@given(DOCUMENTED)
def test_the_documented_grammar_is_accepted_within_kubernetes_bounds(text):
    theirs = k8s_parse(text)
    assert theirs is not None, text
    if abs(theirs) < K8S_MAX:  # a capped value is refused here instead (said clearly)
        assert Fraction(parse_quantity(text)) == theirs, text
    else:
        try:
            assert Fraction(parse_quantity(text)) == theirs, text  # exactly the maximum
        except QuantityError as err:
            assert "largest quantity" in str(err)


ANYTHING = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.decimals()
    | st.text()
    | QUANTITY_TEXT
    | DOCUMENTED,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=5,
)


@PROPERTY
@given(ANYTHING)
def test_the_parser_raises_nothing_but_quantity_error(value):
    try:
        parsed = parse_quantity(value)
    except QuantityError:
        return
    assert isinstance(parsed, Decimal) and parsed.is_finite()
    assert abs(parsed) <= K8S_MAX
    assert (parsed * 10**9) % 1 == 0  # whole nanos, as Kubernetes stores them


@PROPERTY
@given(DOCUMENTED, st.sampled_from([None, True, False]))
def test_format_round_trips(text, binary):
    try:
        value = parse_quantity(text)
    except QuantityError:
        return
    written = format_quantity(value, binary)
    assert parse_quantity(written) == value, (text, written)
    assert k8s_parse(written) == Fraction(value), written


NANOS = st.integers(-K8S_MAX, K8S_MAX).map(lambda n: Decimal(n).scaleb(-9))


@PROPERTY
@given(NANOS, NANOS)
def test_parsing_keeps_the_order_of_amounts(a, b):
    pa, pb = parse_quantity(format_quantity(a)), parse_quantity(format_quantity(b))
    assert (pa < pb) == (a < b) and (pa == pb) == (a == b)


@PROPERTY
@given(st.integers(1, 999), st.integers(0, 5), st.integers(0, 5))
def test_larger_suffixes_mean_larger_amounts(n, i, j):
    ladders = (["n", "u", "m", "", "k", "M", "G", "T", "P"], ["", "Ki", "Mi", "Gi", "Ti", "Pi"])
    for ladder in ladders:
        a, b = parse_quantity(f"{n}{ladder[i]}"), parse_quantity(f"{n}{ladder[j]}")
        assert (a < b) == (i < j)


# --------------------------------------------------------------------------------------------
# The cluster spec validator
# --------------------------------------------------------------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3)
    ),
    max_leaves=6,
)
FIELD_VALUES = {
    "name": st.from_regex(r"[a-z][-a-z0-9]{0,60}", fullmatch=True) | st.text(max_size=60),
    "queue": st.sampled_from(["team", "", " team ", "other", "Team"]) | st.text(max_size=10),
    "image": st.sampled_from(["rayproject/ray:2.60.0", "quay.io/x/ray", " ", ""]) | st.text(),
    "worker_cpu": DOCUMENTED | st.floats() | st.integers(),
    "head_cpu": DOCUMENTED | st.floats() | st.integers(),
    "worker_memory": DOCUMENTED | st.integers() | st.floats(),
    "head_memory": DOCUMENTED | st.integers() | st.floats(),
    "worker_gpu": st.integers(-2, 10) | DOCUMENTED,
    "workers": st.integers(-5, 2**40) | st.text(alphabet="0123456789-+ ", max_size=12),
    "min_workers": st.integers(-5, 20),
    "max_workers": st.integers(-5, 20),
    "env": st.dictionaries(st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True), st.text()),
    "labels": st.dictionaries(
        st.from_regex(r"([a-z]{1,5}(\.[a-z]{1,4})?/)?[a-z][-a-z0-9._]{0,8}", fullmatch=True),
        st.from_regex(r"([A-Za-z0-9][-A-Za-z0-9_.]{0,10})?", fullmatch=True),
    ),
    "tolerations": st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "key": st.sampled_from(["gpu", "nvidia.com/gpu", "", "a/b/c"]),
                "operator": st.sampled_from(["Equal", "Exists", "In"]),
                "value": st.sampled_from(["", "x", "a b"]),
                "effect": st.sampled_from(["", "NoSchedule", "Never"]),
            },
        )
        | st.text(max_size=20),
        max_size=3,
    ),
    "node_selector": st.dictionaries(st.sampled_from(["gpu", "a/b", "", "x.y/z"]), st.text()),
    "priority": st.sampled_from(["", "high", "High", "low"]) | st.text(max_size=8),
}
REQUESTS = st.fixed_dictionaries(
    {}, optional={name: JSON | values for name, values in FIELD_VALUES.items()}
).flatmap(
    lambda request: st.dictionaries(st.text(max_size=12), JSON, max_size=2).map(
        lambda extra: {**extra, **request}
    )
)
POLICIES = st.sampled_from(
    [
        SpecPolicy(),
        SpecPolicy(max_workers=4, max_worker_cpu="2", max_worker_memory="8Gi", max_worker_gpu=1),
        SpecPolicy(allowed_images=("rayproject/", "quay.io/x/*"), elastic_jobs=True),
    ]
)
ARGUMENTS = st.fixed_dictionaries(
    {
        "policy": POLICIES,
        "known_queues": st.sampled_from([None, ["team"], []]),
        "default_queue": st.sampled_from([None, "team"]),
        "known_priorities": st.sampled_from([None, ["high"]]),
    }
)


def parse(request: Any, arguments: dict[str, Any]) -> ValidatedSpec | None:
    """The spec, or None when refused; anything but :class:`SpecError` fails the test."""
    try:
        return ValidatedSpec.from_request(request, **arguments)
    except SpecError as err:
        assert err.errors and all(isinstance(m, str) and m for m in err.errors.values())
        return None


@PROPERTY
@given(REQUESTS | JSON, ARGUMENTS)
def test_the_validator_raises_nothing_but_spec_error(request, arguments):
    parse(request, arguments)


@settings(PROPERTY, max_examples=250)
@given(REQUESTS, ARGUMENTS)
def test_a_valid_spec_round_trips_and_stays_in_bounds(request, arguments):
    spec = parse(request, arguments)
    if spec is None:
        return
    policy: SpecPolicy = arguments["policy"]
    assert ValidatedSpec.from_request(spec.to_json(), **arguments) == spec
    assert set(spec.to_json()) == set(FIELDS)
    # Nothing outside the fields was taken: unknown keys are refused, never ignored.
    assert set(request) <= set(FIELDS)
    assert ray_cluster_name_error(spec.name) is None
    if policy.max_workers is not None:
        assert max(spec.workers, spec.max_workers) <= policy.max_workers
    if policy.max_worker_cpu is not None:
        assert spec.worker_cpu <= policy.max_worker_cpu
    if policy.allowed_images:
        assert spec.image.startswith("rayproject/") or spec.image.startswith("quay.io/x/")
    if arguments["known_queues"] is not None:
        assert spec.queue in arguments["known_queues"]


@settings(PROPERTY, max_examples=150)
@given(REQUESTS, ARGUMENTS, st.sampled_from(["team-a", "ns1", "a" * 63]))
def test_a_valid_spec_is_a_raycluster_kuberay_accepts_in_its_namespace(
    request, arguments, namespace
):
    spec = parse(request, arguments)
    if spec is None:
        return
    obj = spec.to_raycluster(namespace, owner="system:serviceaccount:team-a:workbench")
    assert obj["metadata"]["namespace"] == namespace and obj["metadata"]["name"] == spec.name
    assert all(label_value_error(v) is None for v in obj["metadata"]["labels"].values())
    schema = _rayclusters_v1_schema()
    errors = [e.message for e in jsonschema.Draft7Validator(schema).iter_errors(obj)]
    assert errors == [] and unknown_fields(obj, schema) == []


@PROPERTY
@given(st.text(max_size=60) | st.from_regex(r"[a-z][-a-z0-9./%]{0,60}", fullmatch=True))
def test_a_valid_cluster_name_is_one_plain_path_segment(name):
    if ray_cluster_name_error(name) is not None:
        return
    # Nothing a URL or a Kubernetes path could read as more than one segment, or as '.'.
    assert quote(name, safe="") == name and name not in (".", "..")
    assert 1 <= len(name) <= MAX_NAME_LENGTH
