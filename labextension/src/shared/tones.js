// Every state, verdict and Ray job status any surface shows, and the colour it is shown in:
// ONE table for the notebook's HTML (display.py, job_display.py read it), the widgets (their
// ESM starts with this file) and the sidebar (it imports this file; types in tones.d.ts).
//
// A value has a tone; a tone has a JupyterLab CSS variable (right in every theme) and the
// colour used where JupyterLab's variables are not defined (VS Code, Notebook outside Lab).
// The object after `TONE_TABLE =` is strict JSON so that Python reads it (tones.py); the unit
// tests check that every state the domain can produce has a tone here. Badges put white text
// on these (the variables are mid-tones in JupyterLab's light and dark themes alike).
export const TONE_TABLE = {
  "tones": {
    "ok": { "css": "--jp-success-color1", "fallback": "#2f855a" },
    "wait": { "css": "--jp-warn-color1", "fallback": "#b7791f" },
    "progress": { "css": "--jp-brand-color1", "fallback": "#2b6cb0" },
    "bad": { "css": "--jp-error-color1", "fallback": "#c53030" },
    "neutral": { "css": "--jp-layout-color4", "fallback": "#718096" }
  },
  "state": {
    "queued": "wait",
    "waiting-for-capacity": "wait",
    "admitted": "progress",
    "starting": "progress",
    "ready": "ok",
    "running": "ok",
    "succeeded": "ok",
    "stalled": "bad",
    "evicted": "bad",
    "preempted": "bad",
    "failed": "bad",
    "rejected": "bad",
    "suspended": "neutral",
    "stopped": "neutral",
    "finished": "neutral",
    "deleting": "neutral"
  },
  "verdict": {
    "fits-now": "ok",
    "must-wait": "wait",
    "never-fits": "bad",
    "unknown": "neutral"
  },
  "span": {
    "queue": "wait",
    "capacity": "wait",
    "head": "progress",
    "workers": "progress",
    "resize-queue": "wait",
    "resize-workers": "progress",
    "running": "progress"
  },
  "job": {
    "PENDING": "wait",
    "RUNNING": "progress",
    "SUCCEEDED": "ok",
    "FAILED": "bad",
    "STOPPED": "neutral"
  }
};

/** The tone of `value` in table `kind` ("state", "verdict", "span" — a timeline span's step
 * without its `:<n>` — or "job"); "neutral" if unknown. */
export function toneOf(kind, value) {
  return (TONE_TABLE[kind] && TONE_TABLE[kind][value]) || "neutral";
}

/** A CSS colour for a tone: JupyterLab's variable, with the fallback where it is undefined. */
export function toneColor(tone) {
  const entry = TONE_TABLE.tones[tone] || TONE_TABLE.tones.neutral;
  return `var(${entry.css}, ${entry.fallback})`;
}

/** The colour `value` of table `kind` is shown in. */
export function colorOf(kind, value) {
  return toneColor(toneOf(kind, value));
}
