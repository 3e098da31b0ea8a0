"""Result collections that behave like the sequences they are: ``for q in dw.queues()``,
``len(dw.clusters())``, ``dw.queues()["team-a"]`` (by name) or ``[0]`` (by position)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Generic, TypeVar, overload

T = TypeVar("T")


class ByName(Generic[T]):
    """A mixin for a frozen answer that holds a tuple of named entries: subclasses say which
    tuple (:meth:`_entries`) and how an entry is named (:meth:`_name_of`)."""

    def _entries(self) -> Sequence[T]:
        raise NotImplementedError

    @staticmethod
    def _name_of(entry: T) -> str:
        return str(getattr(entry, "name"))  # noqa: B009  (entries name themselves)

    def __iter__(self) -> Iterator[T]:
        return iter(self._entries())

    def __len__(self) -> int:
        return len(self._entries())

    def __bool__(self) -> bool:
        # An answer is an answer even when it lists nothing (``if queues:`` tells an answer
        # from a missing one, as before these answers were sequences).
        return True

    def __contains__(self, name: object) -> bool:
        return any(self._name_of(entry) == name for entry in self._entries())

    @overload
    def __getitem__(self, key: int) -> T: ...
    @overload
    def __getitem__(self, key: str) -> T: ...
    def __getitem__(self, key: int | str) -> T:
        """An entry by position, or by name (``KeyError`` naming the ones there are)."""
        if isinstance(key, int):
            return self._entries()[key]
        for entry in self._entries():
            if self._name_of(entry) == key:
                return entry
        names = ", ".join(self.names()) or "none"
        raise KeyError(f"{key!r} is not here; there are: {names}")

    def names(self) -> list[str]:
        """The entries' names, in order."""
        return [self._name_of(entry) for entry in self._entries()]
