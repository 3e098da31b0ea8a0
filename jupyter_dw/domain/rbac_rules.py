"""Whether a list of RBAC rules (a SelfSubjectRulesReview's) allows one request. Pure.
The matching Kubernetes' RBAC authorizer does (docs/explanation/architecture.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

ALL = "*"


@dataclass(frozen=True)
class ResourceRule:
    """One ``resourceRules`` entry of a SelfSubjectRulesReview."""

    verbs: frozenset[str]
    api_groups: frozenset[str]
    resources: frozenset[str]
    resource_names: frozenset[str] = frozenset()

    @classmethod
    def from_json(cls, rule: Mapping[str, Any]) -> ResourceRule:
        """Read one ``resourceRules`` entry (absent lists are empty: they match nothing)."""
        return cls(
            frozenset(str(v) for v in rule.get("verbs") or ()),
            frozenset(str(g) for g in rule.get("apiGroups") or ()),
            frozenset(str(r) for r in rule.get("resources") or ()),
            frozenset(str(n) for n in rule.get("resourceNames") or ()),
        )

    def allows(
        self, verb: str, group: str, resource: str, subresource: str = "", name: str = ""
    ) -> bool:
        """Whether this rule allows ``verb`` on ``resource[/subresource]`` of ``group`` (the
        core group is ``""``), for the object ``name`` (``""``: a request without a name)."""
        if ALL not in self.verbs and verb not in self.verbs:
            return False
        if ALL not in self.api_groups and group not in self.api_groups:
            return False
        if not _resource_matches(self.resources, resource, subresource):
            return False
        return not self.resource_names or name in self.resource_names


def _resource_matches(rule_resources: frozenset[str], resource: str, subresource: str) -> bool:
    if ALL in rule_resources:
        return True
    combined = f"{resource}/{subresource}" if subresource else resource
    if combined in rule_resources:
        return True
    # ``*/log`` grants every resource's ``log`` subresource (never the resource itself).
    return bool(subresource) and f"{ALL}/{subresource}" in rule_resources


def rules_allow(
    rules: Iterable[ResourceRule],
    verb: str,
    group: str,
    resource: str,
    subresource: str = "",
    name: str = "",
) -> bool:
    """Whether any of ``rules`` allows the request (see :meth:`ResourceRule.allows`)."""
    return any(rule.allows(verb, group, resource, subresource, name) for rule in rules)
