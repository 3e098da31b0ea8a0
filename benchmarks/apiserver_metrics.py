"""The few kube-apiserver metrics the fleet benchmark reads (``GET /metrics`` as the
administrator), each summed over its labels: what the API server holds and sends for every
client at once, controllers included (the audit log sees service accounts only).
"""

from __future__ import annotations

from dataclasses import dataclass

from kubernetes import client

FAMILIES = {
    # Open requests that never end on their own, by verb: WATCH is every watch of every client.
    "watches_open": ("apiserver_longrunning_requests", 'verb="WATCH"'),
    # Events the API server sent to watchers, and their bytes (before compression).
    "watch_events": ("apiserver_watch_events_total", ""),
    "watch_event_bytes": ("apiserver_watch_events_sizes_sum", ""),
    "goroutines": ("go_goroutines", ""),
    "heap_inuse_bytes": ("go_memstats_heap_inuse_bytes", ""),
}


@dataclass(frozen=True)
class ApiServerMetrics:
    """One scrape, each family summed."""

    watches_open: float
    watch_events: float
    watch_event_bytes: float
    goroutines: float
    heap_inuse_bytes: float


def parse(text: str) -> ApiServerMetrics:
    """The families of :data:`FAMILIES` in Prometheus' text format, each summed over the
    samples whose labels contain its filter."""
    sums = dict.fromkeys(FAMILIES, 0.0)
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        name_and_labels, _, value = line.rpartition(" ")
        name = name_and_labels.split("{", 1)[0]
        for key, (family, needle) in FAMILIES.items():
            if name == family and needle in name_and_labels:
                sums[key] += float(value)
    return ApiServerMetrics(**sums)


def scrape(kube: client.ApiClient) -> ApiServerMetrics:
    """``GET /metrics`` of the API server ``kube`` (an administrator's client) talks to."""
    answer = kube.call_api(
        "/metrics",
        "GET",
        auth_settings=["BearerToken"],
        _preload_content=False,
        response_type=None,
    )
    return parse(answer[0].data.decode())
