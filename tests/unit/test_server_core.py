"""A kernel reading through its server reads each answer back as the type the core method
declares: every method a kernel may call is declared in :mod:`jupyter_dw.core.kernel_calls`
exactly as the core's service has it, with a return type that resolves and decodes; and the
kernel does so without importing the Kubernetes layer."""

from __future__ import annotations

import inspect
import subprocess
import sys
import typing
from typing import Any

import pytest

from jupyter_dw.core.clusters import ClusterService
from jupyter_dw.core.kernel_calls import (
    KERNEL_CALLS,
    KIND_CALLS,
    KIND_PREFIX,
    SERVICE_CALLS,
    KindCalls,
    calls_shape,
)
from jupyter_dw.core.kind_service import KindService
from jupyter_dw.core.queues import QueueService
from jupyter_dw.core.ray_jobs import RayJobService
from jupyter_dw.core.services import DWCore
from jupyter_dw.core.workloads import WorkloadService
from jupyter_dw.domain.job_kind import Info
from jupyter_dw.domain.json_decode import decoder
from jupyter_dw.domain.kinds import KINDS
from jupyter_dw.k8s.session import KubeSession
from jupyter_dw.notebook.server_core import ServerCore, _bound, returns

CORE = ServerCore(link=None, add_listener=None, gone=None)  # type: ignore[arg-type]  # unused
CALLS = [
    *((service, method) for service, methods in KERNEL_CALLS.items() for method in methods),
    *((KIND_PREFIX + kind.plural, method) for kind in KINDS for method in KIND_CALLS),
]
SERVICES: dict[str, type] = {
    "queues": QueueService,
    "workloads": WorkloadService,
    "clusters": ClusterService,
    "jobs": RayJobService,
    "session": KubeSession,
    "core": DWCore,
}
"""What answers each service's calls on the server (a workload kind's: :class:`KindService`)."""
SHAPE_ONLY = {("core", "context")}
"""Declared as what the kernel reads, not as the core's type: ``dw.context()`` shows the JSON."""


def bound_types(service: str) -> dict[Any, Any]:
    if service.startswith(KIND_PREFIX):
        return CORE.kind(service[len(KIND_PREFIX) :])._types
    return {}


@pytest.mark.parametrize(("service", "method"), sorted(CALLS), ids="{0[0]}.{0[1]}".format)
def test_every_callable_method_has_a_return_type_that_decodes(service: str, method: str):
    answer = _bound(returns(calls_shape(service), method), bound_types(service))
    assert answer is not Any, f"{service}.{method} declares no return type"
    assert Info not in typing.get_args(answer), answer  # the kind's record type bound
    decoder(answer)  # raises NoDecoder for a type JSON cannot be read as


def signature_of(member: Any) -> tuple[list[tuple[str, Any, Any]], Any]:
    """Parameters (name, kind, default) and the resolved return type of a method or a
    property's getter."""
    function = member.fget if isinstance(member, property) else member
    parameters = [
        (p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()
    ]
    return parameters, typing.get_type_hints(function).get("return", Any)


@pytest.mark.parametrize(
    ("service", "method"),
    sorted({(s if not s.startswith(KIND_PREFIX) else "kind", m) for s, m in CALLS}),
    ids="{0[0]}.{0[1]}".format,
)
def test_each_declared_call_is_the_service_method_itself(service: str, method: str):
    if (service, method) in SHAPE_ONLY:
        assert callable(getattr(SERVICES[service], method))
        return
    shape = KindCalls if service == "kind" else SERVICE_CALLS[service]
    owner = KindService if service == "kind" else SERVICES[service]
    declared_parameters, declared = signature_of(getattr(shape, method))
    parameters, actual = signature_of(getattr(owner, method))
    if isinstance(getattr(owner, method), property):  # read, not called: no parameters
        assert declared_parameters == [
            ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect._empty)
        ]
    else:
        assert parameters == declared_parameters
    assert actual == declared


def test_a_kind_service_answers_with_its_own_record_type():
    for kind in KINDS:
        shape, types = (
            calls_shape(KIND_PREFIX + kind.plural),
            bound_types(KIND_PREFIX + kind.plural),
        )
        listed = _bound(returns(shape, "list"), types)
        assert typing.get_args(listed) == (kind.record_type,)
        assert _bound(returns(shape, "get"), types) is kind.record_type


NOT_IN_A_KERNEL_THROUGH_ITS_SERVER = (
    "urllib3",
    "kubernetes",
    "jupyter_dw.k8s.client",
    "jupyter_dw.k8s.session",
    "jupyter_dw.k8s.watch_cache",
    "jupyter_dw.core.services",
    "jupyter_dw.core.feed",
)
"""What connects to Kubernetes or serves from watch caches: a kernel reading through its
server needs none of it (a fifth of the API's import time, and its memory, before this)."""

KERNEL_SCRIPT = """
import sys, typing
import jupyter_dw as dw
import jupyter_dw.notebook.api, jupyter_dw.notebook.widgets, jupyter_dw.notebook.magics
import jupyter_dw.notebook.display, jupyter_dw.notebook.job_view
from jupyter_dw.core.kernel_calls import KERNEL_CALLS, KIND_CALLS, KIND_PREFIX, calls_shape
from jupyter_dw.domain.json_decode import decoder
from jupyter_dw.domain.kinds import KINDS
from jupyter_dw.notebook.server_core import ServerCore, _bound, returns
from jupyter_dw.notebook.runtime import KernelRuntime
core = ServerCore(link=None, add_listener=None, gone=None)
kinds = [(KIND_PREFIX + k.plural, KIND_CALLS) for k in KINDS]
for service, methods in [*KERNEL_CALLS.items(), *kinds]:
    plural = service.removeprefix(KIND_PREFIX)
    types = core.kind(plural)._types if service.startswith(KIND_PREFIX) else {}
    for method in methods:
        decoder(_bound(returns(calls_shape(service), method), types))
KernelRuntime()
names = [getattr(dw, name) for name in dw.__all__]
print(" ".join(sorted(sys.modules)))
"""


def test_a_kernel_through_its_server_imports_no_kubernetes_client():
    """The API, the widgets, the magics and every answer's decoder, imported in a fresh
    process as a kernel imports them: none of the Kubernetes layer's client, session or
    caches, nor the core's services."""
    loaded = subprocess.run(
        [sys.executable, "-c", KERNEL_SCRIPT], check=True, capture_output=True, text=True
    ).stdout.split()
    assert "jupyter_dw.notebook.server_core" in loaded  # the script ran what it says
    assert not [m for m in NOT_IN_A_KERNEL_THROUGH_ITS_SERVER if m in loaded]
