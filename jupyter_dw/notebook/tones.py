"""The colour of every state, verdict and Ray job status, read from the one table the widgets
and the sidebar also use (``labextension/src/shared/tones.js``, which the build copies to
``static/shared/``): the notebook's HTML draws from it too."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, Literal

TONES_JS = Path(__file__).parent / "static" / "shared" / "tones.js"
ToneKind = Literal["state", "verdict", "span", "job"]


@cache
def tone_table() -> dict[str, Any]:
    """The table: ``tones`` (tone -> CSS variable and fallback) and a tone per value of
    ``state``, ``verdict`` and ``job``. The JS object literal is strict JSON (between
    ``TONE_TABLE =`` and the first ``};``)."""
    text = TONES_JS.read_text()
    literal = text.split("export const TONE_TABLE =", 1)[1].split("};", 1)[0] + "}"
    table: dict[str, Any] = json.loads(literal)
    return table


def tone_of(kind: ToneKind, value: str | None) -> str:
    """The tone of ``value`` in table ``kind``; ``neutral`` when the table has none."""
    return str(tone_table()[kind].get(value or "", "neutral"))


def tone_color(tone: str) -> str:
    """A CSS colour for ``tone``: JupyterLab's variable with its fallback, as tones.js says."""
    tones = tone_table()["tones"]
    entry = tones.get(tone, tones["neutral"])
    return f"var({entry['css']}, {entry['fallback']})"


def color_of(kind: ToneKind, value: str | None) -> str:
    """A CSS colour for ``value`` of table ``kind``."""
    return tone_color(tone_of(kind, value))
