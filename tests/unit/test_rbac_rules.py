"""Matching a SelfSubjectRulesReview's rules against one request, as the RBAC authorizer does."""

from __future__ import annotations

import pytest

from jupyter_dw.domain.rbac_rules import ResourceRule, rules_allow

KQ = "kueue.x-k8s.io"


def rule(verbs, groups, resources, names=()) -> ResourceRule:
    return ResourceRule.from_json(
        {"verbs": verbs, "apiGroups": groups, "resources": resources, "resourceNames": names}
    )


@pytest.mark.parametrize(
    ("the_rule", "request_", "allowed"),
    [
        # Exact verb, group and resource.
        (rule(["list"], [KQ], ["localqueues"]), ("list", KQ, "localqueues"), True),
        (rule(["list"], [KQ], ["localqueues"]), ("watch", KQ, "localqueues"), False),
        (rule(["list"], [KQ], ["localqueues"]), ("list", "ray.io", "localqueues"), False),
        (rule(["list"], [KQ], ["localqueues"]), ("list", KQ, "workloads"), False),
        # The core group is "", not a wildcard.
        (rule(["get"], [""], ["pods"]), ("get", "", "pods"), True),
        (rule(["get"], [""], ["pods"]), ("get", "apps", "pods"), False),
        (rule(["get"], ["apps"], ["pods"]), ("get", "", "pods"), False),
        # Wildcards.
        (rule(["*"], ["ray.io"], ["rayclusters"]), ("delete", "ray.io", "rayclusters"), True),
        (rule(["get"], ["*"], ["pods"]), ("get", "", "pods"), True),
        (rule(["get"], [""], ["*"]), ("get", "", "secrets"), True),
        (rule(["get"], [""], ["*"]), ("get", "", "pods", "log"), True),
        # Subresources: named exactly, or */sub; the resource does not grant them, nor they it.
        (rule(["get"], [""], ["pods/log"]), ("get", "", "pods", "log"), True),
        (rule(["get"], [""], ["pods"]), ("get", "", "pods", "log"), False),
        (rule(["get"], [""], ["pods/log"]), ("get", "", "pods"), False),
        (rule(["get"], [""], ["pods/log"]), ("get", "", "pods", "exec"), False),
        (rule(["get"], [""], ["*/log"]), ("get", "", "pods", "log"), True),
        (rule(["get"], [""], ["*/log"]), ("get", "", "pods"), False),
        (
            rule(["get"], ["visibility.kueue.x-k8s.io"], ["localqueues/pendingworkloads"]),
            ("get", "visibility.kueue.x-k8s.io", "localqueues", "pendingworkloads"),
            True,
        ),
        # resourceNames: only a request for one of those names (a list carries none).
        (rule(["get"], [""], ["secrets"], ["token"]), ("get", "", "secrets", "", "token"), True),
        (rule(["get"], [""], ["secrets"], ["token"]), ("get", "", "secrets", "", "other"), False),
        (rule(["get"], [""], ["secrets"], ["token"]), ("get", "", "secrets"), False),
        (rule(["list"], [""], ["secrets"], []), ("list", "", "secrets"), True),
        # An absent list matches nothing.
        (ResourceRule.from_json({"verbs": ["get"], "resources": ["x"]}), ("get", "", "x"), False),
    ],
)  # fmt: skip
def test_a_rule_allows_what_rbac_would(the_rule, request_, allowed):
    assert the_rule.allows(*request_) is allowed


def test_any_rule_allowing_is_enough_and_no_rule_denies():
    rules = [
        rule(["list"], ["kueue.x-k8s.io"], ["localqueues"]),
        rule(["watch"], ["kueue.x-k8s.io"], ["localqueues"]),
    ]
    assert rules_allow(rules, "list", "kueue.x-k8s.io", "localqueues")
    assert rules_allow(rules, "watch", "kueue.x-k8s.io", "localqueues")
    assert not rules_allow(rules, "create", "kueue.x-k8s.io", "localqueues")
    assert not rules_allow([], "list", "kueue.x-k8s.io", "localqueues")
