"""A Ray cluster request parsed: every default and limit applied, every bad field reported.
Read with the shared request parser, checked against a
:class:`~jupyter_dw.domain.spec_policy.SpecPolicy`, one ``SpecError``. Pure. KubeRay's and
Kueue's rules it applies: docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from functools import partial
from typing import Any

from jupyter_dw.domain.cluster_fields import (
    check_image,
    parse_count,
    parse_env,
    parse_image,
    parse_labels,
    parse_node_selector,
    parse_tolerations,
    ray_version_of_image,
)
from jupyter_dw.domain.ray_auth import (
    MIN_RAY_VERSION,
    RayVersionError,
    check_ray_version,
    parse_ray_version,
    version_text,
)
from jupyter_dw.domain.request_fields import FieldError, RequestFields, show
from jupyter_dw.domain.spec_policy import SpecPolicy
from jupyter_dw.domain.validation import dns1035_label_error

MAX_NAME_LENGTH = 53
"""KubeRay's ``MaxRayClusterNameLength``: 63 minus len("-serve-svc"), its longest suffix."""

FIELDS: tuple[str, ...] = (
    "name",
    "queue",
    "workers",
    "worker_cpu",
    "worker_memory",
    "worker_gpu",
    "head_cpu",
    "head_memory",
    "image",
    "min_workers",
    "max_workers",
    "env",
    "labels",
    "tolerations",
    "node_selector",
    "priority",
    "ray_version",
)
"""Every field a request may carry; the same names in REST JSON, Python and ``%dw`` options."""

_SCALING = ("workers", "min_workers", "max_workers")
_AUTOSCALER_V2_ENV = "RAY_enable_autoscaler_v2"


def ray_cluster_name_error(name: str) -> str | None:
    """What is wrong with ``name`` as a RayCluster's name (None if nothing): a DNS-1035 label
    of at most :data:`MAX_NAME_LENGTH` characters, the rule KubeRay enforces. Every name that
    comes from a URL or a request is checked with this before it reaches Kubernetes."""
    return dns1035_label_error(name, MAX_NAME_LENGTH)


def parse_cluster_request(
    data: Mapping[str, Any],
    policy: SpecPolicy,
    known_queues: Collection[str] | None,
    default_queue: str | None,
    known_priorities: Collection[str] | None,
) -> dict[str, Any]:
    """The fields of a ``ValidatedClusterSpec`` for request ``data`` (see
    ``ValidatedClusterSpec.from_request``); raises ``SpecError`` listing every bad field."""
    return _ClusterRequest(data, policy, known_queues, default_queue, known_priorities).parse()


class _ClusterRequest:
    """One cluster request being parsed; the checks that span fields (scaling bounds, the
    Ray version of the image, the autoscaler) live here, each field's own in its parser."""

    def __init__(
        self,
        data: Mapping[str, Any],
        policy: SpecPolicy,
        known_queues: Collection[str] | None,
        default_queue: str | None,
        known_priorities: Collection[str] | None,
    ) -> None:
        self.fields = RequestFields(data, FIELDS)
        self.values, self.errors = self.fields.values, self.fields.errors
        self.policy = policy
        self.known_queues = known_queues
        self.default_queue = default_queue
        self.known_priorities = known_priorities

    def parse(self) -> dict[str, Any]:
        fields, policy = self.fields, self.policy
        name = fields.required(
            "name", _parse_name, "required: give the cluster a name, e.g. 'my-ray'"
        )
        if isinstance(self.values.get("queue"), str) and not self.values["queue"].strip():
            # An empty queue (e.g. `--queue ""`) asks for the default, like omitting it.
            del self.values["queue"]
        queue = fields.queue(self.known_queues, self.default_queue)
        image = fields.field(
            "image",
            lambda v: check_image(parse_image(v), policy.allowed_images),
            policy.default_image,
        )
        sizes = {
            size: fields.field(size, partial(policy.sized_value, size), policy.default(size))
            for size in ("head_cpu", "head_memory", "worker_cpu", "worker_memory", "worker_gpu")
        }
        scaling = self._scaling()
        env = fields.field("env", parse_env, {})
        labels = fields.field("labels", parse_labels, {})
        tolerations = fields.field("tolerations", parse_tolerations, ())
        node_selector = fields.field("node_selector", parse_node_selector, {})
        priority = fields.priority(self.known_priorities)
        ray_version = self._ray_version(image) if image is not None else None
        if scaling is not None and env is not None:
            self._check_autoscaler_env(env, autoscaling=scaling[1] != scaling[2])
        fields.done()
        assert queue is not None and scaling is not None  # no errors: each of them parsed
        workers, min_workers, max_workers = scaling
        return {
            "name": name,
            "queue": queue,
            "image": image,
            **sizes,
            "workers": workers,
            "min_workers": min_workers,
            "max_workers": max_workers,
            "env": env,
            "labels": labels,
            "tolerations": tolerations,
            "node_selector": node_selector,
            "priority": priority,
            "autoscaler_cpu": policy.autoscaler_cpu,
            "autoscaler_memory": policy.autoscaler_memory,
            "ray_version": ray_version,
            "ray_auth": policy.ray_auth,
        }

    def _ray_version(self, image: str) -> str | None:
        """The Ray version of ``image``: its tag's for a Ray image, else the request's
        ``ray_version`` (then required); checked against what ``ray_auth`` needs."""
        mode = self.policy.ray_auth
        tagged = ray_version_of_image(image)
        given = self.values.get("ray_version")
        if given is not None and not isinstance(given, str):
            self.errors["ray_version"] = f"must be a string such as '2.60.0', got {show(given)}"
            return None
        if given is not None:
            try:
                wanted = parse_ray_version(given)
            except RayVersionError as err:
                self.errors["ray_version"] = str(err)
                return None
            if tagged is not None and parse_ray_version(tagged) != wanted:
                self.errors["ray_version"] = (
                    f"{given!r} does not match the image's tag: {image!r} runs Ray {tagged}"
                )
                return None
        if tagged is not None:
            try:
                return check_ray_version(tagged, mode)
            except RayVersionError as err:
                field = "image" if "image" in self.values else "ray_version"
                self.errors[field] = f"{image!r}: {err}"
                return None
        if given is None:
            needed = MIN_RAY_VERSION.get(mode)
            oldest = f" ({version_text(needed)} or newer)" if needed else ""
            self.errors["ray_version"] = (
                f"required for image {image!r}: its tag does not say which Ray it runs, and "
                f"KubeRay needs spec.rayVersion; give the image's Ray version{oldest}, "
                "e.g. '2.60.0'"
            )
            return None
        try:
            return check_ray_version(given, mode)
        except RayVersionError as err:
            self.errors["ray_version"] = str(err)
            return None

    def _scaling(self) -> tuple[int, int, int] | None:
        """(workers, min_workers, max_workers) after defaults and checks, or None on error."""
        given: dict[str, int | None] = {
            name: self.fields.field(name, parse_count) for name in _SCALING if name in self.values
        }
        if any(value is None for value in given.values()):
            return None  # a count did not parse: comparing the others would only add noise
        for name, value in given.items():
            try:
                self.policy.sized_value("workers", value)
            except FieldError as err:
                self.errors[name] = str(err)
        low, high = given.get("min_workers"), given.get("max_workers")
        workers = given.get("workers")
        if workers is None:
            # Start from the configured default, kept inside the bounds the user gave.
            workers = self.policy.default("workers")
            workers = max(workers, low) if low is not None else workers
            workers = min(workers, high) if high is not None else workers
        low = workers if low is None else low
        high = workers if high is None else high
        self._check_bounds(given, workers, low, high)
        if any(name in self.errors for name in given):
            return None
        return workers, low, high

    def _check_bounds(self, given: Collection[str], workers: int, low: int, high: int) -> None:
        if "min_workers" in given and "max_workers" in given and low > high:
            self.errors.setdefault("min_workers", f"{low} is more than max_workers ({high})")
        elif low > workers:
            self.errors.setdefault(
                "min_workers",
                f"{low} is more than workers ({workers}); the cluster starts with 'workers' and "
                "may shrink to min_workers",
            )
        elif high < workers:
            self.errors.setdefault(
                "max_workers",
                f"{high} is less than workers ({workers}); the cluster starts with 'workers' "
                "and may grow to max_workers",
            )
        elif low != high and not self.policy.elastic_jobs:
            message = (
                f"autoscaling between {low} and {high} workers needs Kueue elastic jobs, "
                "which this server does not enable: without them Kueue admits a fixed number "
                "of workers and rejects a RayCluster that uses the Ray autoscaler. Set "
                "min_workers and max_workers equal to workers, or ask an administrator to "
                "enable elastic jobs (Kueue feature gate ElasticJobsViaWorkloadSlices)"
            )
            for name, value in (("min_workers", low), ("max_workers", high)):
                if name in given and value != workers:
                    self.errors.setdefault(name, message)

    def _check_autoscaler_env(self, env: Mapping[str, str], *, autoscaling: bool) -> None:
        # KubeRay refuses autoscaler v2 switched on by env while the autoscaler is off.
        if not autoscaling and env.get(_AUTOSCALER_V2_ENV, "").lower() in ("1", "true"):
            self.errors.setdefault(
                "env",
                f"{_AUTOSCALER_V2_ENV!r} turns on Ray's autoscaler v2, but this cluster does "
                "not autoscale (min_workers == max_workers), and KubeRay rejects that",
            )


def _parse_name(raw: object) -> str:
    if not isinstance(raw, str):
        raise FieldError(f"must be a string, got {show(raw)}")
    problem = ray_cluster_name_error(raw)
    if problem is None:
        return raw
    message = (
        f"{problem} (KubeRay requires a DNS-1035 label of at most {MAX_NAME_LENGTH} characters: "
        f"it derives Service names such as '<name>-head-svc' from it)"
    )
    suggestion = _suggest_name(raw)
    if suggestion is not None and suggestion != raw:
        message += f"; did you mean {suggestion!r}?"
    raise FieldError(message)


def _suggest_name(raw: str) -> str | None:
    candidate = re.sub(r"[^a-z0-9]+", "-", raw.lower())
    candidate = re.sub(r"^[^a-z]+", "", candidate)[:MAX_NAME_LENGTH].rstrip("-")
    if not candidate or dns1035_label_error(candidate, MAX_NAME_LENGTH) is not None:
        return None
    return candidate
