"""examples/rbac/ grants exactly the permissions the code checks (NEEDED_PERMISSIONS): the
Role every required one, the optional ClusterRole every optional one, nothing more; and the
RBAC the doctor renders for what is missing parses and names only that."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from jupyter_dw.cli import example_rbac
from jupyter_dw.domain.identity import Identity
from jupyter_dw.k8s.access import NEEDED_PERMISSIONS, Permission
from jupyter_dw.k8s.rbac import Subject, render_rbac

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "rbac"
Grant = tuple[str, str, str]  # (apiGroup, resource[/subresource], verb)


def documents(text: str) -> dict[str, dict[str, Any]]:
    """The YAML documents of ``text`` by kind (one of each kind expected)."""
    docs = [d for d in yaml.safe_load_all(text) if d]
    by_kind = {d["kind"]: d for d in docs}
    assert len(by_kind) == len(docs), "one object of each kind"
    return by_kind


def grants(role: dict[str, Any]) -> set[Grant]:
    found: set[Grant] = set()
    for rule in role["rules"]:
        assert set(rule) == {"apiGroups", "resources", "verbs"}, rule  # no names, no wildcards
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    assert "*" not in (group, resource, verb), rule
                    found.add((group, resource, verb))
    return found


def needed(permissions: list[Permission]) -> set[Grant]:
    return {(p.group, p.rbac_resource, p.verb) for p in permissions}


REQUIRED = [p for p in NEEDED_PERMISSIONS if p.required]
OPTIONAL = [p for p in NEEDED_PERMISSIONS if not p.required]


def test_required_permissions_are_the_namespaced_ones():
    # The Role holds the required ones, the optional ClusterRole the rest: the split the
    # examples, the doctor and the docs rely on.
    assert all(p.namespaced for p in REQUIRED)
    assert not any(p.namespaced for p in OPTIONAL)
    assert len({p.name for p in NEEDED_PERMISSIONS}) == len(NEEDED_PERMISSIONS)


def test_the_example_role_grants_exactly_the_required_permissions():
    objects = documents((EXAMPLES / "role.yaml").read_text())
    assert set(objects) == {"Role", "RoleBinding"}
    role, binding = objects["Role"], objects["RoleBinding"]
    assert role["metadata"]["namespace"] == "${NAMESPACE}"
    assert grants(role) == needed(REQUIRED)
    assert binding["metadata"]["namespace"] == "${NAMESPACE}"
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": role["metadata"]["name"],
    }
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "${SERVICE_ACCOUNT}", "namespace": "${NAMESPACE}"}
    ]


def test_the_example_cluster_role_grants_exactly_the_optional_permissions():
    objects = documents((EXAMPLES / "clusterrole.yaml").read_text())
    assert set(objects) == {"ClusterRole", "ClusterRoleBinding"}
    role, binding = objects["ClusterRole"], objects["ClusterRoleBinding"]
    assert grants(role) == needed(OPTIONAL)
    names = {resource for _, resource, _ in grants(role)}
    assert {"clusterqueues", "cohorts", "resourceflavors"} <= names
    assert "workloadpriorityclasses" in names
    # A queue's admission checks are named by its ClusterQueue; the AdmissionChecks and
    # MultiKueue's objects tell only which of them send workloads to other clusters, and where.
    assert {"admissionchecks", "multikueueconfigs", "multikueueclusters"} <= names
    # Read only: list and watch objects, get the pending workloads of ClusterQueues and the
    # ClusterTrainingRuntime a TrainJob is fitted on.
    assert {verb for _, r, verb in grants(role) if "/" not in r} == {"list", "watch", "get"}
    assert {r for _, r, verb in grants(role) if verb == "get" and "/" not in r} == {
        "clustertrainingruntimes"
    }
    assert {(r, verb) for _, r, verb in grants(role) if "/" in r} == {
        ("clusterqueues/pendingworkloads", "get")
    }
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert "${NAMESPACE}" in binding["metadata"]["name"]  # one binding per service account
    assert "${SERVICE_ACCOUNT}" in binding["metadata"]["name"]


def test_every_example_rule_says_what_it_unlocks():
    purposes = {p.purpose for p in NEEDED_PERMISSIONS}
    for name in ("role.yaml", "clusterrole.yaml"):
        lines = (EXAMPLES / name).read_text().splitlines()
        for index, line in enumerate(lines):
            if line.strip().startswith("- apiGroups:"):
                comment = lines[index - 1].strip()
                assert comment.startswith("#"), f"{name}: rule without a comment: {line}"
                assert any(p in comment for p in purposes), comment


def test_jupyter_dw_rbac_prints_the_examples_for_one_service_account():
    text = example_rbac("team-a", "my-workbench")
    objects = documents(text)
    assert set(objects) == {"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}
    assert grants(objects["Role"]) == needed(REQUIRED)
    assert grants(objects["ClusterRole"]) == needed(OPTIONAL)
    subject = {"kind": "ServiceAccount", "name": "my-workbench", "namespace": "team-a"}
    assert objects["RoleBinding"]["subjects"] == [subject]
    assert objects["ClusterRoleBinding"]["subjects"] == [subject]
    assert "ClusterRole" not in documents(example_rbac("a", "b", optional=False))


def test_the_fix_names_only_what_is_missing():
    missing = [p for p in NEEDED_PERMISSIONS if p.name == "create rayclusters.ray.io"]
    identity = Identity("system:serviceaccount:team-a:wb")
    text = render_rbac(missing, "team-a", Subject.of(identity, "team-a"))
    objects = documents(text)
    assert set(objects) == {"Role", "RoleBinding"}
    assert grants(objects["Role"]) == {("ray.io", "rayclusters", "create")}
    assert objects["Role"]["metadata"]["namespace"] == "team-a"
    assert objects["RoleBinding"]["subjects"] == [
        {"kind": "ServiceAccount", "name": "wb", "namespace": "team-a"}
    ]
    # Another set of missing permissions gets other names: applying one fix never
    # overwrites another.
    more = [p for p in REQUIRED if p.name == "delete rayclusters.ray.io"] + missing
    other = render_rbac(more, "team-a", Subject.of(identity, "team-a"))
    assert documents(other)["Role"]["metadata"]["name"] != objects["Role"]["metadata"]["name"]
    assert render_rbac([], "team-a", Subject.of(identity, "team-a")) == ""


def test_the_fix_for_a_user_binds_the_user():
    subject = Subject.of(Identity("alice@example.com"), "team-a")
    objects = documents(render_rbac(OPTIONAL, "team-a", subject))
    assert objects["ClusterRoleBinding"]["subjects"] == [
        {"kind": "User", "name": "alice@example.com", "apiGroup": "rbac.authorization.k8s.io"}
    ]
    name = objects["ClusterRole"]["metadata"]["name"]
    assert name == name.lower() and "@" not in name
