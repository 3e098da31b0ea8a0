"""What this workbench's clusters hold and use per LocalQueue, summed in core (one place for
the sidebar's queue line, the QueueBoard and the events socket)."""

from __future__ import annotations

from decimal import Decimal

from jupyter_dw.core.cluster_results import ClusterInfo
from jupyter_dw.core.holdings import holding, holdings
from jupyter_dw.domain.cluster_state import cluster_snapshot
from jupyter_dw.domain.usage import ClusterUsage, ResourceUse


def info(name: str, queue: str | None, owner: str | None, cpu: str, used: str | None):
    raycluster = {
        "metadata": {"name": name, "namespace": "ns", "labels": {}},
        "spec": {},
    }
    if queue is not None:
        raycluster["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = queue
    usage = ClusterUsage(
        {"cpu": ResourceUse(Decimal(cpu), Decimal(used) if used is not None else None)},
        metrics_reason=None if used is not None else "no metrics API",
    )
    return ClusterInfo(cluster_snapshot(raycluster), None, owner, (), (), usage=usage)


def test_only_my_clusters_in_the_queue_are_summed():
    infos = [
        info("a", "team-a", "me", "4", "1.4"),
        info("b", "team-a", "me", "8", "0"),
        info("c", "team-a", "someone", "16", "16"),
        info("d", "team-b", "me", "2", None),
        info("e", None, "me", "1", "1"),
        info("f", "team-a", None, "32", "1"),  # not made through jupyter_dw
    ]
    assert infos[0].snapshot.queue == "team-a"
    assert holding(infos, "team-a", "me").to_json() == {
        "clusters": 2,
        "resources": {"cpu": {"held": "12", "used": "1400m"}},
    }
    every = holdings(infos, "me")
    assert sorted(every) == ["team-a", "team-b"]
    assert every["team-b"].to_json()["resources"]["cpu"] == {"held": "2", "used": None}
    # Without a known username, every cluster made through jupyter_dw is "mine".
    assert holding(infos, "team-a", None).clusters == 3


def test_a_cluster_without_usage_adds_nothing():
    bare = ClusterInfo(
        cluster_snapshot(
            {
                "metadata": {
                    "name": "x",
                    "namespace": "ns",
                    "labels": {"kueue.x-k8s.io/queue-name": "team-a"},
                },
                "spec": {},
            }
        ),
        None,
        "me",
        (),
        (),
    )
    assert holding([bare], "team-a", "me").to_json() == {"clusters": 0, "resources": {}}
