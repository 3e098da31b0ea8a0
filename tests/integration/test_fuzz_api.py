"""The REST API fuzzed from its own description (``jupyter_dw/openapi.yaml``) with schemathesis,
against the running server on the real control plane.

Every operation of the description is fuzzed, with data that fits the schema (positive) and
data that does not (negative). Each answer is checked by schemathesis (no 5xx, a status and
content type the description lists, a body matching the schema) and counted. The namespace is
the test's own, with a LocalQueue on a ClusterQueue of zero quota: valid creations are real
RayClusters and Workloads, but nothing is ever admitted, so no pod runs. Afterwards it holds
exactly the objects it held before plus those of clusters created with 201 (minus any deleted
with 200), which are then deleted through the API.

Generation is derandomized (the same requests every run) and reads and writes no example
database, so a run is deterministic. The server runs on the test's event loop; the
(synchronous) fuzzer runs on a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import requests
import schemathesis
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.checks import (
    FailureGroup,
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

import jupyter_dw
from tests.cluster.versions import Versions
from tests.integration.clusters_support import make_queue, namespace_objects
from tests.integration.workbench_rbac import CLUSTER_READ_RULES, namespace_rules

pytestmark = pytest.mark.cluster

WORKBENCH_RULES = namespace_rules()
WORKBENCH_CLUSTER_RULES = CLUSTER_READ_RULES
OPENAPI = Path(jupyter_dw.__file__).parent / "openapi.yaml"
SPEC = yaml.safe_load(OPENAPI.read_text())
EXAMPLES = {GenerationMode.POSITIVE: 100, GenerationMode.NEGATIVE: 50}
"""Generated cases per operation and mode. Negative cases exist only where something can be
invalid (the bodies, the names in paths, the workload filters, the events socket's header):
14 x 100 + 10 x 50 = 1,900 requests."""
CREDENTIALS = ("Authorization", "_xsrf")
"""The security schemes' parameters: the test sends the real token, never generated ones."""
MIN_REQUESTS = 1000
CONTROLLER = 5
MIN_ACCEPTED = {
    "GET /version": 1.0,
    "GET /context": 1.0,
    "GET /queues": 1.0,
    "GET /clusters": 1.0,
    "GET /workloads": 1.0,
    "POST /clusters": 0.1,
    "POST /clusters/fit": 0.25,
}
"""The least share of schema-valid requests answered 2xx, per operation: a schema looser than
the server makes "valid" requests that are all refused, and a fuzz run that then tests only
refusals. Measured: 17 and 36 of 100 (the rest: names taken by earlier cases, LocalQueues that
do not exist, sizes over the limits). Operations on a named cluster or job get generated names
that do not exist (404 is right), and the events socket needs a WebSocket upgrade: no floor."""
"""Where :func:`namespace_objects` puts an object's controller UID."""
COLLECTIONS = {"clusters": "rayclusters", "rayjobs": "rayjobs", "trainjobs": "trainjobs"}
"""REST collection → the Kubernetes plural of what it creates."""
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
TRAINER_ON_BED = Versions.selected().trainjobs
"""Whether this test bed runs Kubeflow Trainer (beside Kueue 0.19). Where it does not, the
``trainjobs`` operations' right answer to a well-formed request is 503
``trainer_not_installed``: checked as such instead of as a server error."""


@dataclass
class Tally:
    """What the fuzzer sent and got."""

    requests: int = 0
    by_operation: Counter[str] = field(default_factory=Counter)
    statuses: Counter[int] = field(default_factory=Counter)
    created: set[tuple[str, str]] = field(default_factory=set)
    """``(plural, name)`` of each RayCluster and RayJob made with a 201."""
    deleted: set[tuple[str, str]] = field(default_factory=set)
    failures: list[str] = field(default_factory=list)
    trainer_not_installed: int = 0
    """``trainjobs`` requests answered 503 ``trainer_not_installed`` on a bed without Trainer."""
    seconds: Counter[str] = field(default_factory=Counter)
    """Time spent waiting for answers, per operation (the rest is generation)."""
    valid: Counter[str] = field(default_factory=Counter)
    """Schema-valid (positive) requests sent, per operation."""
    accepted: Counter[str] = field(default_factory=Counter)
    """Of those, the ones answered 2xx."""


@dataclass(frozen=True)
class Target:
    """Where the requests go, with which credentials."""

    base_url: str
    session: requests.Session
    headers: dict[str, str]


def _fuzz_operation(
    operation: schemathesis.APIOperation,
    mode: GenerationMode,
    examples: int,
    target: Target,
    tally: Tally,
) -> None:
    """``examples`` generated cases of ``operation``, sent and checked into ``tally``."""

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(
        max_examples=examples,
        deadline=None,
        derandomize=True,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case: schemathesis.Case) -> None:
        started = time.monotonic()
        response = case.call(
            base_url=target.base_url, session=target.session, headers=target.headers
        )
        tally.seconds[operation.label] += time.monotonic() - started
        tally.requests += 1
        tally.by_operation[operation.label] += 1
        tally.statuses[response.status_code] += 1
        if mode is GenerationMode.POSITIVE:
            tally.valid[operation.label] += 1
            tally.accepted[operation.label] += 200 <= response.status_code < 300
        collection = case.path.strip("/").split("/")[0]
        plural = COLLECTIONS.get(collection)
        created = case.method == "POST" and case.path in ("/clusters", "/rayjobs", "/trainjobs")
        if created and plural and response.status_code == 201:
            tally.created.add((plural, response.json()["name"]))
        if case.method == "DELETE" and plural and response.status_code == 200:
            tally.deleted.add((plural, response.json()["name"]))
        checks = CHECKS
        if collection == "trainjobs" and not TRAINER_ON_BED:
            checks = [c for c in CHECKS if c is not not_a_server_error]
            if response.status_code >= 500:
                code = response.json().get("code")
                if response.status_code != 503 or code != "trainer_not_installed":
                    request = f"{case.method} {case.formatted_path}"
                    tally.failures.append(
                        f"{request}: {response.status_code} {code} without Trainer"
                    )
                else:  # the right answer here: counted apart from the server errors
                    tally.statuses[response.status_code] -= 1
                    tally.trainer_not_installed += 1
        try:
            case.validate_response(response, checks=checks, headers=target.headers)
        except (AssertionError, FailureGroup) as err:
            request = f"{case.method} {case.formatted_path} {case.body!r:.300}"
            tally.failures.append(f"{request}\n{err}"[:1500])

    run()


def fuzz(base_url: str, token: str) -> Tally:
    """Generate, send and check; return the tally (failures collected, not raised, so one
    run reports them all)."""
    schema = schemathesis.openapi.from_path(OPENAPI)
    tally = Tally()
    session = requests.Session()
    headers = {"Authorization": f"token {token}"}
    for result in schema.get_all_operations():
        operation = result.ok()
        for mode, examples in EXAMPLES.items():
            if mode is GenerationMode.NEGATIVE and not _negatable(operation):
                continue
            _fuzz_operation(operation, mode, examples, Target(base_url, session, headers), tally)
    return tally


def _negatable(operation: schemathesis.APIOperation) -> bool:
    """Whether invalid input can be made for ``operation``: a body, or a parameter other
    than the credentials."""
    parameters = [p for p in operation.iter_parameters() if p.name not in CREDENTIALS]
    return bool(len(operation.body)) or bool(parameters)


async def test_fuzzed_requests_get_documented_answers_and_change_nothing_else(
    kube, kueue, namespace, kueue_api_version, jp_fetch, jp_http_port, jp_base_url, jp_serverapp
):
    # Valid creations queue forever: the ClusterQueue has no quota, so no pod ever runs.
    make_queue(kueue, cpu="0", memory="0")
    await jp_fetch("dw", "api", "queues")  # the server is up and its caches synced
    before = namespace_objects(kube, namespace, kueue_api_version)

    base_url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}dw/api"
    token = jp_serverapp.identity_provider.token
    tally = await asyncio.get_running_loop().run_in_executor(None, fuzz, base_url, token)

    print(
        f"fuzzed {tally.requests} requests; statuses {dict(sorted((+tally.statuses).items()))}; "
        f"trainer_not_installed {tally.trainer_not_installed}; "
        f"per operation {dict(tally.by_operation)}; created {len(tally.created)}; answer "
        f"seconds { ({k: round(v, 1) for k, v in tally.seconds.items()}) }; valid accepted "
        f"{ ({k: f'{tally.accepted[k]}/{n}' for k, n in tally.valid.items()}) }"
    )
    assert tally.failures == [], "\n\n".join(tally.failures[:10])
    assert tally.requests >= MIN_REQUESTS
    operations = [
        f"{method.upper()} {path}"
        for path, item in SPEC["paths"].items()
        for method in item
        if method in ("get", "post", "put", "patch", "delete")
    ]
    assert sorted(tally.by_operation) == sorted(operations), tally.by_operation  # every one
    assert not [s for s in +tally.statuses if s >= 500], tally.statuses
    short = {
        op: f"{tally.accepted[op]}/{tally.valid[op]}"
        for op, share in MIN_ACCEPTED.items()
        if tally.accepted[op] < share * tally.valid[op] or not tally.valid[op]
    }
    assert not short, short

    after = namespace_objects(kube, namespace, kueue_api_version)
    ours = tally.created - tally.deleted
    added = {key for key in after if key not in before}
    removed = {key for key in before if key not in after}
    assert removed <= tally.deleted, removed
    assert ours <= added
    # Anything else new (Workloads, KubeRay's token Secrets, a TrainJob's JobSet and the
    # JobSet's Service) is controlled by one of them, or by what one of them controls.
    uids = {after[key][0] for key in ours}
    while grown := {after[k][0] for k in added if after[k][CONTROLLER] in uids} - uids:
        uids |= grown
    strays = {key for key in added if key not in ours and after[key][CONTROLLER] not in uids}
    assert not strays, strays
    assert {k: v for k, v in after.items() if k in before} == {
        k: v for k, v in before.items() if k not in removed
    }

    routes = {plural: collection for collection, plural in COLLECTIONS.items()}
    for plural, name in sorted(ours):  # the valid creations go
        response = await jp_fetch(
            "dw", "api", routes[plural], name, method="DELETE", request_timeout=60
        )
        assert json.loads(response.body)["deleted"] is True
