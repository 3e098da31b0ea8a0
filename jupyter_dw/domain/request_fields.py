"""What every job request parser shares (RayJob, TrainJob): known fields, unknown ones named
with a close match, one message per bad field, the name and queue rules, and the one
``SpecError`` carrying them all. Pure.

A request is a mapping of fields; ``None`` counts as omitted. Each field is parsed by a
function that returns the value or raises ``ValueError`` with the words the user sees.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection, Mapping
from typing import Any

from jupyter_dw.domain.cluster_spec import (
    REQUEST_ERROR_KEY,
    SpecError,
    parse_priority,
    resolve_queue,
)


class RequestFields:
    """One request being parsed against ``known`` field names, collecting every bad field in
    ``errors`` (field → message) so one answer lists them all."""

    def __init__(self, data: Any, known: tuple[str, ...]) -> None:
        if not isinstance(data, Mapping):
            raise SpecError({REQUEST_ERROR_KEY: f"must be a mapping of fields, got {data!r:.80}"})
        self.known = known
        self.values: dict[str, Any] = {str(k): v for k, v in data.items() if v is not None}
        self.errors: dict[str, str] = {}
        for unknown in [k for k in self.values if k not in known]:
            close = difflib.get_close_matches(unknown, known, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            self.errors[unknown] = f"unknown field{hint}; known fields: {', '.join(known)}"

    def field(self, name: str, parse: Callable[[Any], Any], default: Any = None) -> Any:
        """``parse`` of field ``name``, ``default`` when omitted, None (error noted) when bad."""
        if name not in self.values:
            return default
        try:
            return parse(self.values[name])
        except ValueError as err:
            self.errors[name] = str(err)
            return None

    def required(self, name: str, parse: Callable[[Any], Any], missing: str) -> Any:
        """Like :meth:`field`, and ``missing`` (``"required: ..."``) when omitted."""
        if name not in self.values:
            self.errors[name] = missing
            return None
        return self.field(name, parse)

    def queue(self, known_queues: Collection[str] | None, default_queue: str | None) -> Any:
        """The ``queue`` field, or the namespace's default LocalQueue when omitted (the same
        rule and words as a cluster's)."""
        if "queue" in self.values:
            return self.field(
                "queue", lambda v: resolve_queue(v, known_queues, default_queue), None
            )
        try:
            return resolve_queue(None, known_queues, default_queue)
        except ValueError as err:
            self.errors["queue"] = str(err)
            return None

    def priority(self, known_priorities: Collection[str] | None) -> str | None:
        """The ``priority`` field: a WorkloadPriorityClass name, checked when the classes are
        readable."""
        return self.field("priority", lambda v: parse_priority(v, known_priorities), None)

    def done(self) -> None:
        """Raise the ``SpecError`` listing every bad field, if any."""
        if self.errors:
            raise SpecError(self.errors)
