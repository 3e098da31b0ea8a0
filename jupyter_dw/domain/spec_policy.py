"""The defaults and limits of the clusters users create: :data:`SIZES` and :class:`SpecPolicy`.
Pure. ``SIZES`` is the one table the policy, the settings and the limit checks come from
(docs/explanation/architecture.md).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import partial
from typing import Any

from jupyter_dw.domain.cluster_fields import (
    check_image,
    cpu_text,
    memory_text,
    parse_allowed_images,
    parse_count,
    parse_cpu,
    parse_gpu,
    parse_image,
    parse_memory,
    ray_version_of_image,
)
from jupyter_dw.domain.ray_auth import (
    DEFAULT_RAY_AUTH,
    RAY_AUTH_MODES,
    RayVersionError,
    check_ray_version,
)
from jupyter_dw.domain.request_fields import FieldError, show

# Newest Ray release on PyPI when this was written (2.60.0); the image need not be pullable in
# tests, where pods run on fake nodes.
DEFAULT_RAY_IMAGE = "rayproject/ray:2.60.0"

DEFAULT_AUTOSCALER_CPU = Decimal("0.5")
DEFAULT_AUTOSCALER_MEMORY = Decimal(512 * 2**20)
"""KubeRay's own defaults for the autoscaler sidecar (``BuildAutoscalerContainer``), which
Kueue 0.19 also assumes when ``autoscalerOptions.resources`` is unset."""


@dataclass(frozen=True)
class Size:
    """One sized field of a cluster request and its two settings, ``default_<field>`` and
    ``max_<field>`` (None: no limit beyond the queue's quota)."""

    field: str
    kind: str
    """How a value is read and shown: ``count`` and ``gpu`` are whole numbers (integer
    settings), ``cpu`` and ``memory`` Kubernetes quantities (string settings)."""
    default: int | Decimal
    unit: str
    """The words after a shown limit: "4 CPUs per worker"."""

    @property
    def default_name(self) -> str:
        return f"default_{self.field}"

    @property
    def limit_name(self) -> str:
        return f"max_{self.field}"

    @property
    def is_quantity(self) -> bool:
        return self.kind in ("cpu", "memory")

    def parse(self, raw: object) -> Any:
        """The value of ``raw`` (``FieldError`` with the user's words when it is not one)."""
        return _PARSE[self.kind](raw)

    def text(self, value: Any) -> str:
        """``value`` as a user writes it: ``"500m"``, ``"2Gi"``, ``"4"``."""
        return _TEXT[self.kind](value)

    def request_value(self, value: Any) -> int | str:
        """``value`` as a request carries it: a whole number for counts, the quantity's text
        (``"750m"``) for sizes, so a client can show it, or send it back, as it is."""
        return self.text(value) if self.is_quantity else int(value)


_PARSE: dict[str, Callable[[Any], Any]] = {
    "count": parse_count,
    "gpu": parse_gpu,
    "cpu": parse_cpu,
    "memory": parse_memory,
}
_TEXT: dict[str, Callable[[Any], str]] = {
    "count": str,
    "gpu": str,
    "cpu": cpu_text,
    "memory": memory_text,
}

SIZES: tuple[Size, ...] = (
    Size("workers", "count", 1, "workers"),
    Size("head_cpu", "cpu", Decimal(1), "CPUs for the head"),
    Size("head_memory", "memory", Decimal(2 * 2**30), "for the head"),
    Size("worker_cpu", "cpu", Decimal(1), "CPUs per worker"),
    Size("worker_memory", "memory", Decimal(2 * 2**30), "per worker"),
    Size("worker_gpu", "gpu", 0, "GPUs per worker"),
)
"""Every sized field of a cluster request: the one table of cluster sizes."""

SIZE_OF: Mapping[str, Size] = {size.field: size for size in SIZES}


def _size_fields(cls: type) -> type:
    """Add ``default_<field>`` and ``max_<field>`` of every row of :data:`SIZES` to the
    dataclass-to-be ``cls`` (run before ``dataclass``), so the table is their one spelling.

    A type checker sees only the fields written in the class; nothing in ``jupyter_dw``
    names these in code (it goes through :data:`SIZES`), and at run time they are ordinary
    dataclass fields (keyword arguments, attributes, ``repr``, equality).
    """
    annotations = dict(inspect.get_annotations(cls))
    for size in SIZES:
        value_type = "int" if not size.is_quantity else "Decimal"
        annotations[size.default_name] = value_type
        setattr(cls, size.default_name, size.default)
        annotations[size.limit_name] = f"{value_type} | None"
        setattr(cls, size.limit_name, None)
    cls.__annotations__ = annotations
    return cls


@dataclass(frozen=True)
@_size_fields
class SpecPolicy:
    """Defaults and limits for cluster requests, set by the server's configuration.

    Besides the fields below, ``default_<field>`` and ``max_<field>`` for each row of
    :data:`SIZES` (``default_workers``, ``max_worker_cpu``, ...). Quantity fields accept
    anything ``parse_quantity`` does (``"2Gi"``, ``"500m"``, ``4``) and are stored as
    ``Decimal``; counts accept whole numbers. A limit of ``None`` means no limit beyond the
    Kueue quota. ``allowed_images`` holds image prefixes (``"quay.io/team/"``) or ``fnmatch``
    patterns (any entry containing ``*``, ``?`` or ``[``); empty allows any image.
    ``elastic_jobs`` says Kueue runs with ``ElasticJobsViaWorkloadSlices``, the only way it
    accepts autoscaling RayClusters. An inconsistent policy raises ``ValueError`` at creation,
    so a bad configuration fails when the server starts, not on every request.
    """

    default_image: str = DEFAULT_RAY_IMAGE
    allowed_images: tuple[str, ...] = ()
    elastic_jobs: bool = False
    autoscaler_cpu: Decimal = DEFAULT_AUTOSCALER_CPU
    """CPU of the Ray autoscaler sidecar an autoscaling cluster's head pod gets (set
    explicitly in ``autoscalerOptions.resources``, so Kueue and the fit count a known amount)."""
    autoscaler_memory: Decimal = DEFAULT_AUTOSCALER_MEMORY
    ray_auth: str = DEFAULT_RAY_AUTH
    """Ray's authentication on new clusters: ``token`` (KubeRay's), ``k8s`` (Kubernetes
    tokens) or ``disabled``; see :mod:`jupyter_dw.domain.ray_auth`."""

    def __post_init__(self) -> None:
        problems: dict[str, str] = {}

        def normalise(name: str, parse: Callable[[Any], Any], optional: bool = False) -> None:
            value = getattr(self, name)
            if optional and value is None:
                return
            try:
                object.__setattr__(self, name, parse(value))
            except ValueError as err:
                problems[name] = str(err)

        # Limits first: the defaults are checked against them.
        for size in SIZES:
            normalise(size.limit_name, size.parse, optional=True)
        normalise("allowed_images", parse_allowed_images)
        if problems:
            _raise_policy_problems(problems)  # the defaults below are compared with the limits
        for size in SIZES:
            normalise(size.default_name, partial(self.sized_value, size.field))
        normalise("default_image", lambda v: check_image(parse_image(v), self.allowed_images))
        normalise("autoscaler_cpu", parse_cpu)
        normalise("autoscaler_memory", parse_memory)
        if not isinstance(self.elastic_jobs, bool):
            problems["elastic_jobs"] = f"must be true or false, got {show(self.elastic_jobs)}"
        if self.ray_auth not in RAY_AUTH_MODES:
            problems["ray_auth"] = (
                f"must be one of {', '.join(RAY_AUTH_MODES)}, got {show(self.ray_auth)}"
            )
        elif "default_image" not in problems and (
            image_version := ray_version_of_image(self.default_image)
        ):
            try:
                check_ray_version(image_version, self.ray_auth)
            except RayVersionError as err:
                problems["default_image"] = f"{self.default_image!r}: {err}"
        if problems:
            _raise_policy_problems(problems)

    def default(self, field: str) -> Any:
        """The default of sized field ``field`` (a row of :data:`SIZES`)."""
        return getattr(self, SIZE_OF[field].default_name)

    def limit(self, field: str) -> Any:
        """The limit on sized field ``field``, or None."""
        return getattr(self, SIZE_OF[field].limit_name)

    def published_sizes(self) -> dict[str, dict[str, int | str | None]]:
        """Each sized field's default and limit (``{"worker_cpu": {"default": "750m", "max":
        "4"}}``), as a request writes them: what a form shows as the value it will get when
        left empty, and the most it may ask for (None: no limit beyond the queue's quota)."""
        return {
            size.field: {
                "default": size.request_value(self.default(size.field)),
                "max": (
                    None if (limit := self.limit(size.field)) is None else size.request_value(limit)
                ),
            }
            for size in SIZES
        }

    def sized_value(self, field: str, raw: object) -> Any:
        """Parse sized field ``field`` and check it against this policy's limit."""
        size = SIZE_OF[field]
        value = size.parse(raw)
        limit = self.limit(field)
        if limit is not None and value > limit:
            raise FieldError(
                f"{size.text(value)} is more than this server's limit of "
                f"{size.text(limit)} {size.unit}"
            )
        return value


@dataclass(frozen=True)
class PublishedPolicy:
    """What a server publishes of its :class:`SpecPolicy` (``GET context``'s
    ``cluster_policy``): the default image and each sized field's default and limit as a
    request writes them. All a client reading through that server knows of the policy (the
    server applies the rest)."""

    default_image: str
    sizes: Mapping[str, Mapping[str, int | str | None]]

    def published_sizes(self) -> dict[str, dict[str, int | str | None]]:
        """As :meth:`SpecPolicy.published_sizes`."""
        return {field: dict(size) for field, size in self.sizes.items()}


def _raise_policy_problems(problems: Mapping[str, str]) -> None:
    details = "; ".join(f"{name}: {message}" for name, message in problems.items())
    raise ValueError(f"invalid SpecPolicy: {details}")
