"""A cluster's and a fit check's fields are real attributes of the results the API returns
(``info.state``, ``result.verdict``): typed properties a reader, tab completion and mypy see,
not names forwarded at run time."""

from __future__ import annotations

import dataclasses
import inspect
import typing
from decimal import Decimal

import pytest

from jupyter_dw.core.cluster_results import ClusterInfo, FitResult
from jupyter_dw.domain.cluster_spec import ValidatedClusterSpec
from jupyter_dw.domain.cluster_state import ClusterSnapshot, cluster_snapshot
from jupyter_dw.domain.fit import FitVerdict, assess_fit

RAYCLUSTER = {
    "metadata": {"name": "rc", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
    "spec": {"workerGroupSpecs": [{"groupName": "workers", "replicas": 2}]},
}


def cluster_info() -> ClusterInfo:
    return ClusterInfo(cluster_snapshot(RAYCLUSTER), "/dw/ray/rc/", "alice", (), ())


def fit_result() -> FitResult:
    spec = ValidatedClusterSpec.from_request({"name": "rc", "queue": "q", "workers": 2})
    verdict = assess_fit({"cpu": Decimal(3)}, None, None)  # quota hidden: "unknown"
    return FitResult(verdict, spec, True, None, None)


READ_THROUGH = [
    pytest.param(ClusterInfo, ClusterSnapshot, "snapshot", cluster_info, id="ClusterInfo"),
    pytest.param(FitResult, FitVerdict, "assessment", fit_result, id="FitResult"),
]


@pytest.mark.parametrize(("result", "record", "inner", "make"), READ_THROUGH)
def test_each_field_of_the_record_is_a_property_of_the_same_type(result, record, inner, make):
    assert "__getattr__" not in vars(result)  # nothing is forwarded at run time
    members = dict(inspect.getmembers(result))
    record_types = typing.get_type_hints(record)
    for field in dataclasses.fields(record):
        prop = members.get(field.name)
        assert isinstance(prop, property), f"{result.__name__}.{field.name} is not a property"
        assert typing.get_type_hints(prop.fget)["return"] == record_types[field.name], field.name
        assert prop.__doc__, f"{result.__name__}.{field.name} has no docstring"


@pytest.mark.parametrize(("result", "record", "inner", "make"), READ_THROUGH)
def test_each_property_reads_the_record(result, record, inner, make):
    made = make()
    names = {field.name for field in dataclasses.fields(record)}
    assert names <= set(dir(made))  # tab completion lists them
    for name in names:
        assert getattr(made, name) == getattr(getattr(made, inner), name), name
    with pytest.raises(AttributeError):
        made.no_such_field  # noqa: B018


def test_every_rest_field_of_a_cluster_is_an_attribute():
    # The API promises REST's field names: each key of the JSON is an attribute too.
    info = cluster_info()
    assert set(info.to_json()) <= set(dir(info))
    assert (info.name, info.namespace, info.queue, info.state) == ("rc", "ns", "q", "starting")
    assert info.capacity_provisioned is False and info.workers_desired == 2


def test_every_rest_field_of_a_fit_check_is_an_attribute():
    result = fit_result()
    assert set(result.to_json()) <= set(dir(result))
    assert (result.verdict, result.reason) == ("unknown", "QuotaHidden")
    assert result.requests == {"cpu": Decimal(3)}
