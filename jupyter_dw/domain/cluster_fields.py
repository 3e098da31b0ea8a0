"""The values of a Ray cluster request's fields: one parser per kind of value. Pure.
Each returns the value or raises ``FieldError`` with the user's words; TrainJob requests share
them (docs/explanation/architecture.md).
"""

from __future__ import annotations

import fnmatch
import math
import re
from collections.abc import Collection, Mapping
from decimal import Decimal

from jupyter_dw.domain.quantity import QuantityError, format_quantity, parse_quantity
from jupyter_dw.domain.ray_auth import RESERVED_ENV
from jupyter_dw.domain.request_fields import FieldError, show
from jupyter_dw.domain.scheduling import EFFECTS, OPERATORS, Toleration
from jupyter_dw.domain.validation import (
    env_name_error,
    label_key_error,
    label_value_error,
)
from jupyter_dw.names import (
    KUEUE_GROUP,
    MANAGED_BY_LABEL,
    OWNER_LABEL,
    PRIORITY_CLASS_LABEL,
    QUEUE_LABEL,
    RAY_GROUP,
)

MIN_MEMORY = Decimal(2**20)
"""Below 1Mi a memory amount is almost surely a unit mistake ("4" is 4 bytes, not 4 GiB)."""

INT32_MAX = 2**31 - 1  # replicas, minReplicas and maxReplicas are int32 in the CRD

# Environment variables KubeRay refuses in the head container unless GCS fault tolerance is set
# up through options this form does not offer (utils.ValidateRayClusterSpec).
_KUBERAY_REJECTED_ENV = ("RAY_REDIS_ADDRESS", "REDIS_PASSWORD", "REDIS_USERNAME")

_RESERVED_LABELS = {
    QUEUE_LABEL: "it is set from the 'queue' field",
    MANAGED_BY_LABEL: "jupyter-dw sets it to find the clusters it created",
    OWNER_LABEL: "jupyter-dw sets it from the identity that creates the cluster",
    PRIORITY_CLASS_LABEL: "it is set from the 'priority' field (a WorkloadPriorityClass name)",
}
_RESERVED_LABEL_PREFIXES = {
    f"{RAY_GROUP}/": f"the '{RAY_GROUP}/' prefix belongs to KubeRay",
    f"{KUEUE_GROUP}/": f"the '{KUEUE_GROUP}/' prefix belongs to Kueue",
}

_RAY_IMAGE_TAG = re.compile(r"ray(?:-ml|-llm)?:(\d+\.\d+\.\d+)(?:[-@].*)?")
_COUNT_TEXT = re.compile(r"[+-]?[0-9]+")


def cpu_text(cpu: Decimal) -> str:
    # binary=False: 1024 CPUs is "1024", never "1Ki".
    return format_quantity(cpu, binary=False)


def memory_text(memory: Decimal) -> str:
    """The shorter of the binary and decimal forms: "2Gi" and "8G", not "7812500Ki"."""
    return min(format_quantity(memory, binary=True), format_quantity(memory, binary=False), key=len)


def ray_version_of_image(image: str) -> str | None:
    """The Ray version in a ``.../ray:X.Y.Z...`` image tag, for ``spec.rayVersion``.

    KubeRay uses rayVersion to gate features; a custom image's tag says nothing reliable about
    Ray, so for any other image the field is left out.
    """
    match = _RAY_IMAGE_TAG.fullmatch(image.rsplit("/", 1)[-1])
    return match[1] if match else None


def parse_image(raw: object) -> str:
    if not isinstance(raw, str):
        raise FieldError(f"must be a string, got {show(raw)}")
    image = raw.strip()
    if not image:
        raise FieldError("must not be empty")
    if any(char.isspace() or not char.isprintable() for char in image):
        raise FieldError(f"{show(raw)} must not contain spaces or control characters")
    return image


def parse_allowed_images(raw: object) -> tuple[str, ...]:
    if isinstance(raw, str) or not isinstance(raw, Collection):
        raise FieldError(f"must be a list of image prefixes or patterns, got {show(raw)}")
    entries = tuple(raw)
    if not all(isinstance(entry, str) and entry for entry in entries):
        raise FieldError("every entry must be a non-empty string")
    return entries


def _image_allowed(image: str, allowed: tuple[str, ...]) -> bool:
    for entry in allowed:
        if any(char in entry for char in "*?["):
            if fnmatch.fnmatchcase(image, entry):
                return True
        elif image.startswith(entry):
            return True
    return False


def check_image(image: str, allowed: tuple[str, ...]) -> str:
    if allowed and not _image_allowed(image, allowed):
        listed = ", ".join(repr(entry) for entry in allowed)
        raise FieldError(f"{image!r} is not allowed on this server; allowed images: {listed}")
    return image


def parse_allowed_image(raw: object, allowed: tuple[str, ...]) -> str:
    """An image name, checked against the server's ``allowed_images`` (when any)."""
    return check_image(parse_image(raw), allowed)


def _parse_amount(raw: object) -> Decimal:
    # Strip first: parse_quantity's "$" anchor would let a trailing newline through.
    value = raw.strip() if isinstance(raw, str) else raw
    try:
        return parse_quantity(value)  # type: ignore[arg-type]  # it rejects other types itself
    except QuantityError as err:
        raise FieldError(str(err)) from err


def parse_cpu(raw: object) -> Decimal:
    cpu = _parse_amount(raw)
    if cpu <= 0:
        raise FieldError(f"must be more than 0 CPUs, got {show(raw)}")
    if (cpu * 1000) % 1 != 0:
        raise FieldError(
            f"{show(raw)} is finer than a millicore; CPUs are counted in steps of 1m (0.001)"
        )
    return cpu


def parse_memory(raw: object) -> Decimal:
    memory = _parse_amount(raw)
    if memory <= 0:
        raise FieldError(f"must be more than 0 bytes, got {show(raw)}")
    if memory % 1 != 0:
        hint = ""
        if isinstance(raw, str) and raw.strip().endswith("m"):
            hint = f"; 'm' means milli, did you mean {raw.strip()[:-1] + 'Mi'!r}?"
        raise FieldError(f"{show(raw)} is a fraction of a byte{hint}")
    if memory < MIN_MEMORY:
        hint = ""
        if isinstance(raw, int) or (isinstance(raw, str) and raw.strip().isdigit()):
            hint = f"; memory is counted in bytes, did you mean {str(raw).strip() + 'Gi'!r}?"
        raise FieldError(f"{show(raw)} is only {memory} bytes, less than 1Mi{hint}")
    return memory


def parse_gpu(raw: object) -> int:
    amount = _parse_amount(raw)
    if amount < 0 or amount % 1 != 0:
        raise FieldError(f"must be a whole number of GPUs, 0 or more, got {show(raw)}")
    return int(amount)


def parse_count(raw: object) -> int:
    """A whole number >= 0 given as an int, a digit string ("3") or an integral number (3.0)."""
    if isinstance(raw, bool):
        count = None
    elif isinstance(raw, int):
        count = raw
    elif isinstance(raw, str) and _COUNT_TEXT.fullmatch(raw.strip()):
        count = int(raw.strip())
    elif isinstance(raw, float | Decimal) and math.isfinite(raw) and raw == int(raw):
        count = int(raw)
    else:
        count = None
    if count is None:
        raise FieldError(f"must be a whole number, got {show(raw)}")
    if count < 0:
        raise FieldError(f"must be 0 or more, got {count} (0 workers is a head-only cluster)")
    if count > INT32_MAX:
        raise FieldError(f"{count} is too large (at most {INT32_MAX})")
    return count


def parse_env(raw: object) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise FieldError(
            "must be a mapping of variable names to string values, e.g. {'OMP_NUM_THREADS': '4'}"
        )
    problems = []
    for name, value in raw.items():
        if not isinstance(name, str):
            problems.append(f"variable name {show(name)} is not a string")
            continue
        name_problem = env_name_error(name)
        if name_problem is not None:
            problems.append(name_problem)
        elif name in _KUBERAY_REJECTED_ENV:
            problems.append(
                f"{name!r} is not allowed: KubeRay rejects it unless GCS fault tolerance is "
                "configured, which this form does not offer"
            )
        elif name in RESERVED_ENV:
            problems.append(
                f"{name!r} is not allowed: Ray's authentication is set by this server "
                "(ray_auth) and by KubeRay, which would keep a value set here"
            )
        if not isinstance(value, str):
            problems.append(f"the value of {name!r} must be a string, got {show(value)}")
    if problems:
        raise FieldError("; ".join(problems))
    return dict(raw)


def parse_labels(raw: object) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise FieldError("must be a mapping of label keys to string values, e.g. {'team': 'nlp'}")
    problems = []
    for key, value in raw.items():
        if not isinstance(key, str):
            problems.append(f"label key {show(key)} is not a string")
            continue
        problem = label_key_error(key) or _reserved_label_error(key)
        if problem is not None:
            problems.append(problem)
        if not isinstance(value, str):
            problems.append(f"the value of label {key!r} must be a string, got {show(value)}")
        elif (value_problem := label_value_error(value)) is not None:
            problems.append(value_problem)
    if problems:
        raise FieldError("; ".join(problems))
    return dict(raw)


def _reserved_label_error(key: str) -> str | None:
    if key in _RESERVED_LABELS:
        return f"label {key!r} cannot be set: {_RESERVED_LABELS[key]}"
    for prefix, reason in _RESERVED_LABEL_PREFIXES.items():
        if key.startswith(prefix):
            return f"label {key!r} cannot be set: {reason}"
    return None


def parse_tolerations(raw: object) -> tuple[Toleration, ...]:
    if isinstance(raw, str):
        raw = [part for part in (p.strip() for p in raw.split(",")) if part]
    if not isinstance(raw, list | tuple):
        raise FieldError(
            "must be a list of tolerations, e.g. [{'key': 'nvidia.com/gpu', 'operator': "
            "'Exists', 'effect': 'NoSchedule'}] or 'nvidia.com/gpu:NoSchedule'"
        )
    found, problems = [], []
    for item in raw:
        try:
            found.append(_toleration(item))
        except FieldError as err:
            problems.append(str(err))
    if problems:
        raise FieldError("; ".join(problems))
    return tuple(found)


def _toleration(item: object) -> Toleration:
    """One toleration: a Kubernetes ``Toleration`` mapping, or ``KEY[=VALUE][:EFFECT]``
    (without a value the operator is Exists)."""
    if isinstance(item, str):
        text, _, effect = item.partition(":")
        key, equals, value = text.partition("=")
        item = {"key": key, "operator": "Equal" if equals else "Exists", "effect": effect}
        if equals:
            item["value"] = value
    if not isinstance(item, Mapping):
        raise FieldError(
            f"a toleration must be a mapping or 'KEY[=VALUE][:EFFECT]', got {show(item)}"
        )
    unknown = sorted(set(item) - {"key", "operator", "value", "effect"})
    if unknown:
        raise FieldError(f"unknown toleration field(s) {', '.join(map(repr, unknown))}")
    toleration = Toleration.from_object(item)
    if toleration.operator not in OPERATORS:
        raise FieldError(f"toleration operator {toleration.operator!r} must be one of {OPERATORS}")
    if toleration.effect and toleration.effect not in EFFECTS:
        raise FieldError(f"toleration effect {toleration.effect!r} must be one of {EFFECTS}")
    if toleration.key and (problem := label_key_error(toleration.key)) is not None:
        raise FieldError(f"toleration key: {problem}")
    if not toleration.key and toleration.operator != "Exists":
        raise FieldError("a toleration without a key must use the Exists operator")
    if toleration.operator == "Exists" and toleration.value:
        raise FieldError(f"toleration {toleration.key!r}: Exists takes no value")
    if toleration.value and (problem := label_value_error(toleration.value)) is not None:
        raise FieldError(f"toleration value: {problem}")
    return toleration


def parse_node_selector(raw: object) -> dict[str, str]:
    if isinstance(raw, str):
        pairs = [p.strip() for p in raw.split(",") if p.strip()]
        if any("=" not in p for p in pairs):
            raise FieldError("must be 'key=value[,key=value]' or a mapping of labels")
        raw = dict(p.split("=", 1) for p in pairs)
    if not isinstance(raw, Mapping):
        raise FieldError("must be a mapping of node label keys to values, e.g. {'gpu': 'a100'}")
    problems = []
    for key, value in raw.items():
        if not isinstance(key, str) or not isinstance(value, str):
            problems.append(f"node_selector {show(key)}: keys and values must be strings")
        elif (problem := label_key_error(key) or label_value_error(value)) is not None:
            problems.append(problem)
    if problems:
        raise FieldError("; ".join(problems))
    return dict(raw)
