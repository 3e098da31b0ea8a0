"""A kernel reading through its server reads each answer back as the type the core method
declares: every method a kernel may call has a return type that resolves and decodes."""

from __future__ import annotations

import typing
from typing import Any

import pytest

from jupyter_dw.core.kernel_calls import KERNEL_CALLS, KIND_CALLS, KIND_PREFIX
from jupyter_dw.domain.job_kind import Info
from jupyter_dw.domain.json_decode import decoder
from jupyter_dw.domain.kinds import KINDS
from jupyter_dw.notebook.server_core import ServerCore, _bound, returns


def locals_of(core: ServerCore) -> dict[str, tuple[type, dict[Any, Any]]]:
    """Each service's local class (what its answers' types are read from) and bound types."""
    found = {
        name: (getattr(core, name)._local, {})
        for name in ("queues", "workloads", "clusters", "jobs")
    }
    found["session"] = (core.session._remote._local, {})
    found["core"] = (core._core._local, {})
    for kind in KINDS:
        service = core.kind(kind.plural)
        found[KIND_PREFIX + kind.plural] = (service._local, service._types)
    return found


CORE = ServerCore(link=None, add_listener=None, gone=None)  # type: ignore[arg-type]  # unused
LOCALS = locals_of(CORE)
CALLS = [
    *((service, method) for service, methods in KERNEL_CALLS.items() for method in methods),
    *((KIND_PREFIX + kind.plural, method) for kind in KINDS for method in KIND_CALLS),
]


@pytest.mark.parametrize(("service", "method"), sorted(CALLS), ids="{0[0]}.{0[1]}".format)
def test_every_callable_method_has_a_return_type_that_decodes(service: str, method: str):
    local, types = LOCALS[service]
    answer = _bound(returns(local, method), types)
    assert answer is not Any, f"{service}.{method} declares no return type"
    assert Info not in typing.get_args(answer), answer  # the kind's record type bound
    decoder(answer)  # raises NoDecoder for a type JSON cannot be read as


def test_a_kind_service_answers_with_its_own_record_type():
    for kind in KINDS:
        local, types = LOCALS[KIND_PREFIX + kind.plural]
        listed = _bound(returns(local, "list"), types)
        assert typing.get_args(listed) == (kind.record_type,)
        assert _bound(returns(local, "get"), types) is kind.record_type
