"""Each workload kind from a kernel, one module each (its ``dw.<Kind>Spec``, its handle and its
:class:`~jupyter_dw.notebook.kind_calls.KindCalls`); ``CALLS`` is what ``dw.fit`` and
``dw.submit`` look a spec's kind up in."""

from __future__ import annotations

from typing import Any

from ..kind_calls import KindCalls
from . import rayjob, trainjob

CALLS: tuple[KindCalls[Any], ...] = (rayjob.CALLS, trainjob.CALLS)


def calls_for(spec: object) -> KindCalls[Any] | None:
    """The calls of the kind whose spec class ``spec`` is, or None (a cluster's spec)."""
    return next((calls for calls in CALLS if isinstance(spec, calls.spec)), None)


def calls_named(word: str) -> KindCalls[Any]:
    """The calls of the kind whose word is ``word`` (``"rayjob"``)."""
    return next(calls for calls in CALLS if calls.kind.word == word)
