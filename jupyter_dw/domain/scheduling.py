"""Which ResourceFlavors a pod set may use, decided as Kueue's flavor assigner does.
Taints it tolerates, node labels its selector matches, with Kueue's words. Pure. The rules:
docs/explanation/kueue-mapping.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
"""The taint effects Kueue checks; ``PreferNoSchedule`` never keeps a flavor out."""
OPERATORS = ("Equal", "Exists")


@dataclass(frozen=True)
class Taint:
    """A node taint as a ResourceFlavor declares it."""

    key: str
    effect: str
    value: str = ""

    def __str__(self) -> str:
        value = f"={self.value}" if self.value else ""
        return f"{self.key}{value}:{self.effect}"


@dataclass(frozen=True)
class Toleration:
    """A pod toleration (``operator`` Equal or Exists; empty effect means every effect)."""

    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: Taint) -> bool:
        """Kubernetes' ``Toleration.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        return self.value == taint.value

    def to_json(self) -> dict[str, str]:
        """The Kubernetes ``Toleration`` object (empty fields left out)."""
        body = {"key": self.key, "operator": self.operator, "value": self.value}
        if self.effect:
            body["effect"] = self.effect
        return {k: v for k, v in body.items() if v}

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> Toleration:
        """From a Kubernetes ``Toleration`` dict (lenient: unknown fields ignored)."""
        return cls(
            key=str(obj.get("key") or ""),
            operator=str(obj.get("operator") or "Equal"),
            value=str(obj.get("value") or ""),
            effect=str(obj.get("effect") or ""),
        )


@dataclass(frozen=True)
class FlavorTraits:
    """What of a ResourceFlavor decides which pods may use it."""

    name: str
    node_labels: Mapping[str, str] = field(default_factory=dict)
    node_taints: tuple[Taint, ...] = ()
    tolerations: tuple[Toleration, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "node_labels", MappingProxyType(dict(self.node_labels)))

    @classmethod
    def from_object(cls, obj: Mapping[str, Any]) -> FlavorTraits:
        """From a ``ResourceFlavor`` dict (v1beta1 or v1beta2: the same spec fields)."""
        spec = obj.get("spec") or {}
        labels = spec.get("nodeLabels") or {}
        taints = spec.get("nodeTaints") or []
        tolerations = spec.get("tolerations") or []
        return cls(
            name=str((obj.get("metadata") or {}).get("name") or ""),
            node_labels={str(k): str(v) for k, v in labels.items()},
            node_taints=tuple(
                Taint(
                    str(t.get("key") or ""), str(t.get("effect") or ""), str(t.get("value") or "")
                )
                for t in taints
                if isinstance(t, Mapping)
            ),
            tolerations=tuple(
                Toleration.from_object(t) for t in tolerations if isinstance(t, Mapping)
            ),
        )


def untolerated_taint(flavor: FlavorTraits, tolerations: Iterable[Toleration]) -> Taint | None:
    """The first of the flavor's blocking taints that neither the pod nor the flavor tolerates."""
    every = [*tolerations, *flavor.tolerations]
    for taint in flavor.node_taints:
        if taint.effect in BLOCKING_EFFECTS and not any(t.tolerates(taint) for t in every):
            return taint
    return None


def flavor_mismatch(
    flavor: FlavorTraits,
    tolerations: Iterable[Toleration] = (),
    node_selector: Mapping[str, str] | None = None,
) -> str | None:
    """Why Kueue would not give ``flavor`` to a pod set with these tolerations and node
    selector (its own words), or None when it may."""
    taint = untolerated_taint(flavor, tolerations)
    if taint is not None:
        return f"untolerated taint {taint} in flavor {flavor.name}"
    for key, value in (node_selector or {}).items():
        if key in flavor.node_labels and flavor.node_labels[key] != value:
            return f"flavor {flavor.name} doesn't match node affinity ({key}={value})"
    return None
