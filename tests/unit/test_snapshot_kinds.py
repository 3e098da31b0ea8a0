"""The events snapshot lists the workload kinds (``kinds``) the sidebar is made from: each kind's
plural, word, kind and group, and its jobs under its plural, as ``openapi.yaml`` describes."""

from __future__ import annotations

from jupyter_dw.core.feed_messages import Snapshot, kind_json
from jupyter_dw.domain.kinds import KINDS
from tests.openapi_check import check_event


def test_the_snapshot_lists_every_kind_and_its_jobs_under_its_plural() -> None:
    served, unserved = KINDS
    snapshot = Snapshot(
        namespace="ns",
        queues=None,
        queues_error=None,
        clusters=None,
        clusters_error=None,
        positions_visible=True,
        jobs={served.plural: ([], None), unserved.plural: (None, None)},
        kinds=KINDS,
    ).to_json()
    check_event(snapshot)
    assert snapshot["kinds"] == [kind_json(k) for k in KINDS]
    assert snapshot["kinds"][0] == {
        "plural": "rayjobs",
        "word": "rayjob",
        "kind": "RayJob",
        "group": "ray.io",
    }
    assert (snapshot[served.plural], snapshot[unserved.plural]) == ([], None)
    assert snapshot[f"{served.plural}_error"] is None


def test_a_kind_is_known_by_its_word_in_its_messages_and_by_its_plural_elsewhere() -> None:
    # The sidebar follows a kind's `<word>` messages and lists its snapshot's `<plural>`.
    assert len({k.word for k in KINDS}) == len({k.plural for k in KINDS}) == len(KINDS)
