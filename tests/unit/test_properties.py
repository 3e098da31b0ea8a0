"""Properties of the quantity parser and the cluster spec validator, checked with hypothesis on
generated input (derandomized: the same cases every run, no example database).

The quantity parser's values are compared with Kubernetes' own parser in
tests/unit/test_quantity_oracle.py; here, what needs no oracle: any input at all, order.
"""

from __future__ import annotations

import string
from decimal import Decimal
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
    ValidatedClusterSpec,
    ray_cluster_name_error,
)
from jupyter_dw.domain.quantity import (
    MAX_QUANTITY,
    QuantityError,
    format_quantity,
    parse_quantity,
)
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
# The quantity parser
# --------------------------------------------------------------------------------------------


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
SUFFIX = (
    st.sampled_from(["n", "u", "m", "", "k", "M", "G", "T", "P", "E"])
    | st.sampled_from(["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"])
    | st.builds(
        lambda e, sign, n: f"{e}{sign}{n}",
        st.sampled_from("eE"),
        st.sampled_from(["", "+", "-"]),
        st.integers(0, 40),
    )
)
DOCUMENTED = st.builds(lambda number, suffix: number + suffix, NUMBER, SUFFIX)
"""Strings of Kubernetes' documented quantity grammar (with ``n`` and ``u``, which it
accepts too)."""


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
    assert abs(parsed) <= MAX_QUANTITY
    assert (parsed * 10**9) % 1 == 0  # whole nanos, as Kubernetes stores them


NANOS = st.integers(-(2**63 - 1), 2**63 - 1).map(lambda n: Decimal(n).scaleb(-9))


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


def parse(request: Any, arguments: dict[str, Any]) -> ValidatedClusterSpec | None:
    """The spec, or None when refused; anything but :class:`SpecError` fails the test."""
    try:
        return ValidatedClusterSpec.from_request(request, **arguments)
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
    assert ValidatedClusterSpec.from_request(spec.to_json(), **arguments) == spec
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
