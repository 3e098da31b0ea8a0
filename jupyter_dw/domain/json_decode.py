"""JSON back into the typed records whose ``to_json()`` made it: what a kernel reading through
the Jupyter server gets is the same objects the core hands a kernel that reads Kubernetes
itself. Pure.

:func:`decode` is driven by a dataclass's fields and their type hints (``X | None``,
``tuple[X, ...]``, ``list``, ``Mapping``/``dict``, nested dataclasses, ``Literal``, enums,
``Decimal`` from Kubernetes quantity strings, ``int``/``float``/``bool``/``str``); JSON keys
that are not fields (what ``to_json`` computes: ``summary``, ``timeline``) are ignored. A
class whose JSON has another shape than its fields says how to read it in a ``from_json``
classmethod of its own, which :func:`decode` calls; it reads its plain fields with
:func:`decode_fields`. A field added to a record is read with no change here.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, Literal, TypeVar, Union, cast, overload

from jupyter_dw.domain.quantity import QuantityError, parse_quantity

T = TypeVar("T")
Decoder = Callable[[Any], Any]


class NoDecoder(Exception):
    """A type hint no JSON can be read as (a Protocol, a callable): a record's ``from_json``
    must read that field itself. A mistake in the code, not in the JSON."""


class DecodeError(ValueError):
    """JSON that is not the record it should be: ``path`` says where (``clusters[2].state``),
    ``problem`` what is wrong there."""

    def __init__(self, problem: str, path: str = "") -> None:
        super().__init__(f"{path}: {problem}" if path else problem)
        self.problem = problem
        self.path = path

    def within(self, segment: str) -> DecodeError:
        """The same problem one level further out (``segment``: a field's name, or ``[2]``)."""
        joint = "" if not self.path or self.path.startswith("[") else "."
        return DecodeError(self.problem, f"{segment}{joint}{self.path}")


@overload
def decode(kind: type[T], data: Any) -> T: ...
@overload
def decode(kind: Any, data: Any) -> Any: ...
def decode(kind: Any, data: Any) -> Any:
    """``data`` (decoded JSON) as ``kind``: a record class, or any type hint a field may have
    (``ClusterInfo | None``, ``tuple[WorkloadInfo, ...]``). Raises :class:`DecodeError`
    naming where the JSON differs from the type."""
    return decoder(kind)(data)


def decode_one_of(kinds: Sequence[Any], data: Any) -> Any:
    """``data`` as the first of ``kinds`` it reads as (a union built at run time)."""
    return _union(tuple(kinds))(data)


def decode_key(kind: Any, data: Any, key: str) -> Any:
    """``data[key]`` as ``kind``: a ``from_json`` reading a key of its own (errors name it)."""
    if not isinstance(data, Mapping):
        raise DecodeError(f"must be a JSON object, got {_shown(data)}")
    if key not in data:
        raise DecodeError(f"has no {key!r}")
    try:
        return decoder(kind)(data[key])
    except DecodeError as err:
        raise err.within(key) from None


def decode_fields(cls: type[T], data: Any, **known: Any) -> T:
    """A dataclass ``cls`` from the JSON object ``data``, key by field; ``known`` gives fields
    already read another way (a ``from_json`` reading a reshaped part). A field without a key
    takes its default; one with no default is an error."""
    if type(data) is not dict and not isinstance(data, Mapping):  # JSON's own type first
        raise DecodeError(f"{cls.__name__} must be a JSON object, got {_shown(data)}")
    values: dict[str, Any] = {}
    for name, read, required in _plan(cast(Any, cls)):  # type[T] is hashable at run time
        if known and name in known:
            values[name] = known[name]
            continue
        value = data.get(name, _ABSENT)
        if value is _ABSENT:
            if required:
                raise DecodeError(f"{cls.__name__} has no {name!r}")
            continue
        try:
            values[name] = read(value)
        except DecodeError as err:
            raise err.within(name) from None
    try:
        return cls(**values)
    except (TypeError, ValueError) as err:  # the record's own checks (__post_init__)
        raise DecodeError(f"not a valid {cls.__name__}: {err}") from None


_ABSENT = object()


@functools.cache
def _plan(cls: Any) -> tuple[tuple[str, Decoder, bool], ...]:
    """``(name, decoder, required)`` of each field ``cls`` is constructed with."""
    hints = typing.get_type_hints(cls)
    return tuple(
        (
            f.name,
            _field_decoder(hints[f.name]),
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
        )
        for f in dataclasses.fields(cls)
        if f.init
    )


def _field_decoder(hint: Any) -> Decoder:
    """The decoder of a field's ``hint``; for a hint no JSON is read as (a Protocol), one that
    says so when used: a ``from_json`` that always reads that field itself needs none."""
    try:
        return decoder(hint)
    except NoDecoder as err:
        problem = err

        def refuse(data: Any) -> Any:
            raise problem

        return refuse


@functools.cache
def decoder(kind: Any) -> Decoder:
    """The function that reads JSON as ``kind`` (made once per type)."""
    origin = typing.get_origin(kind)
    args = typing.get_args(kind)
    if kind is Any or isinstance(kind, TypeVar):
        return _same
    if kind is None or kind is type(None):
        return _none
    if origin is Union or isinstance(kind, types.UnionType):
        return _union(args)
    if origin is Literal:
        return _literal(args)
    if origin is not None:
        return _container(kind, origin, args)
    if isinstance(kind, type):
        return _class(kind)
    raise NoDecoder(f"no JSON decoder for type hint {kind!r}")


def _class(cls: type) -> Decoder:
    # Checked before the built-in types: a record may subclass one.
    if callable(getattr(cls, "from_json", None)):
        return _own_reader(cls)
    if dataclasses.is_dataclass(cls):
        return lambda data: decode_fields(cls, data)
    if issubclass(cls, enum.Enum):
        return _enum(cls)
    if cls is Decimal:
        return _decimal
    if cls is bool:
        return _exactly(bool)
    if cls is int:
        return _int
    if cls is float:
        return _float
    if cls is str:
        return _text
    if cls in (dict, list, tuple, frozenset, set):
        return _container(cls, cls, ())
    raise NoDecoder(f"no JSON decoder for {cls.__qualname__}: give it a from_json classmethod")


def _own_reader(cls: type) -> Decoder:
    def read(data: Any) -> Any:
        try:
            return cls.from_json(data)  # type: ignore[attr-defined]
        except DecodeError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            # A from_json reads what it knows is there: anything else is malformed JSON.
            raise DecodeError(f"not a {cls.__name__}: {type(err).__name__}: {err}") from None

    return read


def _container(kind: Any, origin: Any, args: tuple[Any, ...]) -> Decoder:
    if origin in (dict, Mapping) or (
        isinstance(origin, type) and issubclass(origin, Mapping) and origin is not str
    ):
        key = decoder(args[0]) if args else _same
        value = decoder(args[1]) if len(args) > 1 else _same
        return _mapping(key, value)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _sequence(decoder(args[0]), tuple)
    if origin is tuple and args:
        return _fixed(tuple(decoder(a) for a in args))
    if origin in (list, tuple, frozenset, set, Sequence):
        build = {list: list, frozenset: frozenset, set: set}.get(origin, tuple)
        return _sequence(decoder(args[0]) if args else _same, build)
    if origin is type or origin is typing.ClassVar:
        raise NoDecoder(f"no JSON decoder for type hint {kind!r}")
    return decoder(origin)  # a generic class of ours (``JobList[RayJobInfo]``)


def _mapping(key: Decoder, value: Decoder) -> Decoder:
    def read(data: Any) -> dict[Any, Any]:
        if type(data) is not dict and not isinstance(data, Mapping):
            raise DecodeError(f"must be a JSON object, got {_shown(data)}")
        found = {}
        for k, v in data.items():
            try:
                found[key(k)] = value(v)
            except DecodeError as err:
                raise err.within(f"[{k!r}]") from None
        return found

    return read


def _sequence(item: Decoder, build: Callable[[list[Any]], Any]) -> Decoder:
    def read(data: Any) -> Any:
        if not isinstance(data, list | tuple):
            raise DecodeError(f"must be a JSON array, got {_shown(data)}")
        return build(_items((item, value) for value in data))

    return read


def _fixed(items: tuple[Decoder, ...]) -> Decoder:
    def read(data: Any) -> tuple[Any, ...]:
        if not isinstance(data, list | tuple) or len(data) != len(items):
            raise DecodeError(f"must be a JSON array of {len(items)}, got {_shown(data)}")
        return tuple(_items(zip(items, data, strict=True)))

    return read


def _items(pairs: Iterable[tuple[Decoder, Any]]) -> list[Any]:
    """Each value of an array read by its decoder (errors name its index)."""
    found = []
    for index, (item, value) in enumerate(pairs):
        try:
            found.append(item(value))
        except DecodeError as err:
            raise err.within(f"[{index}]") from None
    return found


def _union(members: tuple[Any, ...]) -> Decoder:
    optional = type(None) in members
    choices = [decoder(m) for m in members if m is not type(None)]

    def read(data: Any) -> Any:
        if data is None and optional:
            return None
        if len(choices) == 1:
            return choices[0](data)
        problems = []
        for choice in choices:  # in the order the hint lists them: the first that reads
            try:
                return choice(data)
            except DecodeError as err:
                problems.append(str(err))
        raise DecodeError(f"matches none of its types ({'; '.join(problems)})")

    return read


def _literal(values: tuple[Any, ...]) -> Decoder:
    allowed = frozenset(values)

    def read(data: Any) -> Any:
        if isinstance(data, bool | int | str | None) and data in allowed:
            return data
        shown = ", ".join(repr(v) for v in values)
        raise DecodeError(f"must be one of {shown}, got {_shown(data)}")

    return read


def _enum(cls: type[enum.Enum]) -> Decoder:
    def read(data: Any) -> Any:
        try:
            return cls(data)
        except ValueError:
            raise DecodeError(f"{_shown(data)} is not a {cls.__name__}") from None

    return read


def _decimal(data: Any) -> Decimal:
    # Quantities are Kubernetes strings ("500m", "2Gi"); Ray's own figures are numbers.
    if isinstance(data, bool) or not isinstance(data, str | int | float):
        raise DecodeError(f"must be a quantity, got {_shown(data)}")
    try:
        return _quantity(data)
    except QuantityError as err:
        raise DecodeError(str(err)) from None


_quantity = functools.lru_cache(maxsize=4096, typed=True)(parse_quantity)
"""Quantities repeat (every Workload of a shape asks "1" and "2Gi"): each is parsed once. A
Decimal is immutable, so one is shared safely. Keyed by value and type (1 and 1.0 apart)."""


def _exactly(cls: type) -> Decoder:
    def read(data: Any) -> Any:
        if type(data) is not cls:
            raise DecodeError(f"must be a {cls.__name__}, got {_shown(data)}")
        return data

    return read


def _text(data: Any) -> str:
    """A string, interned: thousands of records repeat the same namespace, queues, states and
    Kueue messages, which a reader then holds once (5,000 Workloads read back: 7.6 MiB, 5.9
    interned; 5.2 with the records' slots)."""
    if type(data) is not str:
        raise DecodeError(f"must be a str, got {_shown(data)}")
    return sys.intern(data)


def _int(data: Any) -> int:
    if isinstance(data, bool) or not isinstance(data, int):
        raise DecodeError(f"must be a whole number, got {_shown(data)}")
    return data


def _float(data: Any) -> float:
    if isinstance(data, bool) or not isinstance(data, int | float):
        raise DecodeError(f"must be a number, got {_shown(data)}")
    return float(data)


def _same(data: Any) -> Any:
    return data


def _none(data: Any) -> None:
    if data is not None:
        raise DecodeError(f"must be null, got {_shown(data)}")


def _shown(data: Any) -> str:
    text = repr(data)
    return text if len(text) <= 60 else f"{text[:57]}..."
