"""One table of colours (``notebook/static/tones.js``) for every state, verdict and Ray job
status that the domain produces and the REST API describes: the notebook's HTML, the widgets
and the sidebar all draw from it, so a state missing here would be drawn grey everywhere."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

import pytest
import yaml

from jupyter_dw.domain.cluster_state import ClusterState
from jupyter_dw.domain.fit import Verdict
from jupyter_dw.domain.job_kind import JobState
from jupyter_dw.domain.kueue_state import WorkloadState
from jupyter_dw.domain.ray_jobs import JOB_STATES
from jupyter_dw.notebook.display import badge
from jupyter_dw.notebook.tones import color_of, tone_of, tone_table

OPENAPI = Path(__file__).parents[2] / "jupyter_dw" / "openapi.yaml"
STATIC = Path(__file__).parents[2] / "jupyter_dw" / "notebook" / "static"

DOMAIN_STATES = {
    *get_args(ClusterState),
    *get_args(WorkloadState),
    *get_args(JobState),
}


def test_every_domain_state_verdict_and_job_status_has_a_tone() -> None:
    table = tone_table()
    assert set(table["state"]) == DOMAIN_STATES, "the table holds exactly the domain's states"
    assert set(get_args(Verdict)) == set(table["verdict"])
    assert set(JOB_STATES) == set(table["job"])


def test_every_state_the_rest_api_describes_has_a_tone() -> None:
    spec = yaml.safe_load(OPENAPI.read_text())
    schemas = spec["components"]["schemas"]
    described = set(schemas["ClusterState"]["enum"]) | set(schemas["WorkloadState"]["enum"])
    for job in ("KubeRayJob", "TrainJob"):
        described |= set(schemas[job]["properties"]["state"]["enum"])
    assert described <= set(tone_table()["state"])


@pytest.mark.parametrize(
    ("kind", "value", "css", "fallback"),
    [
        ("state", "ready", "--jp-success-color1", "#2f855a"),
        ("state", "queued", "--jp-warn-color1", "#b7791f"),
        ("state", "failed", "--jp-error-color1", "#c53030"),
        ("verdict", "never-fits", "--jp-error-color1", "#c53030"),
        ("job", "RUNNING", "--jp-brand-color1", "#2b6cb0"),
        ("state", "no-such-state", "--jp-layout-color4", "#718096"),
    ],
)
def test_color_is_jupyterlabs_variable_with_the_tables_fallback(
    kind: Any, value: str, css: str, fallback: str
) -> None:
    assert color_of(kind, value) == f"var({css}, {fallback})"
    assert badge(value, color_of(kind, value)).count(f"var({css}, {fallback})") == 1


def test_every_tone_has_a_variable_and_a_hex_fallback() -> None:
    tones = tone_table()["tones"]
    used = {tone_of("state", s) for s in tone_table()["state"]}
    assert used <= set(tones)
    for entry in tones.values():
        assert entry["css"].startswith("--jp-")
        assert re.fullmatch(r"#[0-9a-f]{6}", entry["fallback"])


def test_no_surface_keeps_its_own_state_colour_table() -> None:
    """The widgets' ESM and the notebook's HTML name a state's colour only through tones.js."""
    for path in [*STATIC.glob("*.js"), *STATIC.parent.glob("*.py")]:
        if path.name == "tones.js":
            continue
        text = path.read_text()
        for state in ("ready", "queued", "failed", "SUCCEEDED"):
            # A table entry looks like `ready: "#...` or `"ready": "#...`.
            assert not re.search(rf'"?{state}"?\s*:\s*"#[0-9a-fA-F]{{6}}"', text), (path, state)
