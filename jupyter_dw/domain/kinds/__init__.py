"""The workload kinds jupyter_dw creates for Kueue to admit, one module each (a
:class:`~jupyter_dw.domain.job_kind.JobKind` description); ``KINDS`` is what the rest is made
from. A new kind is a module here and its line in ``KINDS``."""

from __future__ import annotations

from typing import Any

from jupyter_dw.domain.job_kind import JobKind
from jupyter_dw.domain.kinds.rayjob import RAYJOB
from jupyter_dw.domain.kinds.trainjob import TRAINJOB

KINDS: tuple[JobKind[Any, Any], ...] = (RAYJOB, TRAINJOB)
"""Every kind, in the order the surfaces list them."""
