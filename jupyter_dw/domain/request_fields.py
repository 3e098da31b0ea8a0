"""What every request parser shares (Ray cluster, RayJob, TrainJob), and ``SpecError``. Pure.
Known fields, close matches for unknown ones, one message per bad field
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection, Mapping
from typing import Any

from jupyter_dw.domain.validation import DNS1123_LABEL_MAX_LENGTH, dns1123_subdomain_error

REQUEST_ERROR_KEY = "request"
"""``SpecError.errors`` key for a problem with the request as a whole (not a mapping)."""


class SpecError(ValueError):
    """A request that cannot be used; ``errors`` maps each bad field to a message."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors: dict[str, str] = dict(errors)
        details = "; ".join(f"{name}: {message}" for name, message in self.errors.items())
        super().__init__(f"invalid cluster spec: {details}")


class FieldError(ValueError):
    """One field's problem; its message is shown to the user as it is."""


def show(value: object) -> str:
    """A short repr of a user-supplied value for messages."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class RequestFields:
    """One request being parsed against ``known`` field names, collecting every bad field in
    ``errors`` (field → message) so one answer lists them all.

    A key that is not a known field is refused even when its value is ``None``: it is a typo
    whatever its value (``{"gpus": None}`` names no field).
    """

    def __init__(self, data: Any, known: tuple[str, ...]) -> None:
        if not isinstance(data, Mapping):
            raise SpecError({REQUEST_ERROR_KEY: f"must be a mapping of fields, got {show(data)}"})
        self.known = known
        # None means "not given", so JSON null and unset keyword arguments behave alike.
        self.values: dict[str, Any] = {str(k): v for k, v in data.items() if v is not None}
        self.errors: dict[str, str] = {}
        self.unknown = [str(k) for k in data if str(k) not in known]

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
        """The ``queue`` field, or the namespace's default LocalQueue when omitted."""
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
        """Raise the ``SpecError`` listing every bad field (unknown ones last), if any."""
        for name in self.unknown:
            self.errors[name] = unknown_field_message(name, self.known)
        if self.errors:
            raise SpecError(self.errors)


def unknown_field_message(name: str, known: tuple[str, ...]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown field{hint}; known fields: {', '.join(known)}"


def name_parser(
    error_of: Callable[[str], str | None], rule: str, what: str = "a string"
) -> Callable[[object], str]:
    """The parser of a name (a job's, or one a request refers to): a string in which
    ``error_of`` finds nothing wrong; a bad one's message ends with ``rule`` (the limit and
    why it is there), a value that is no string says it must be ``what``."""

    def parse(raw: object) -> str:
        if not isinstance(raw, str):
            raise FieldError(f"must be {what}, got {raw!r:.80}")
        problem = error_of(raw)
        if problem is not None:
            raise FieldError(f"{problem} ({rule})")
        return raw

    return parse


def resolve_queue(
    raw: object, known_queues: Collection[str] | None, default_queue: str | None
) -> str:
    """The LocalQueue a request names (``raw``), or ``default_queue`` when ``raw`` is None;
    checked against ``known_queues`` when they are known."""
    available = _choices(known_queues, "; it has no LocalQueues")
    if raw is None:
        if not default_queue:
            raise FieldError(
                f"required: this namespace has no default LocalQueue, so name one{available}"
            )
        queue, source = default_queue, " (the namespace default)"
    elif not isinstance(raw, str):
        raise FieldError(f"must be a string naming a LocalQueue, got {show(raw)}")
    else:
        queue, source = raw.strip(), ""
    return _kueue_name(
        queue,
        known_queues,
        "not a valid LocalQueue name{source}: {problem}",
        "no LocalQueue {name!r}{source} in this namespace{available}",
        source=source,
        available=available,
    )


def parse_priority(raw: object, known: Collection[str] | None) -> str | None:
    """A WorkloadPriorityClass name (empty: none, like omitting it), checked against ``known``
    when the classes are readable."""
    if not isinstance(raw, str):
        raise FieldError(f"must be a string naming a WorkloadPriorityClass, got {show(raw)}")
    name = raw.strip()
    if not name:
        return None
    return _kueue_name(
        name,
        known,
        "not a valid WorkloadPriorityClass name: {problem}{available}",
        "no WorkloadPriorityClass {name!r}{available}",
        available=_choices(known, "; the cluster has none"),
    )


def _choices(known: Collection[str] | None, none: str) -> str:
    """What an error about a name ends with: ``; available: a, b``, ``none`` when there are
    none, nothing when they cannot be read."""
    if known is None:
        return ""
    names = sorted(known)
    return f"; available: {', '.join(names)}" if names else none


def _kueue_name(
    name: str, known: Collection[str] | None, invalid: str, unknown: str, **words: str
) -> str:
    """``name`` (a LocalQueue's, a WorkloadPriorityClass's) when it can be one and, when
    ``known`` is readable, is one of them; else the ``invalid`` or ``unknown`` error, filled
    with ``name``, ``problem`` and ``words``."""
    # The name goes into a label value (<= 63) and Kueue checks it as a DNS-1123 subdomain.
    problem = dns1123_subdomain_error(name, DNS1123_LABEL_MAX_LENGTH)
    if problem is not None:
        raise FieldError(invalid.format(name=name, problem=problem, **words))
    if known is not None and name not in known:
        raise FieldError(unknown.format(name=name, **words))
    return name
