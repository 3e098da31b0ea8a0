// One way to write a time of day on every surface the browser draws (the sidebar, and the
// ClusterStatus, QueueBoard and JobView widgets): the reader's locale and time zone, with
// seconds. The sidebar imports this file; the widgets' ESM includes it (widgets.esm).
// One formatter, made once: `toLocaleTimeString` makes a new one per call, and a panel of 90
// cards with their timelines formatted hundreds of times per change (a fifth of the page's
// busy time at the scale fixture).
const CLOCK = new Intl.DateTimeFormat(undefined, {
  hour: "2-digit",
  minute: "2-digit",
  second: "2-digit",
});

export function clockTime(iso) {
  const at = iso instanceof Date ? iso : new Date(iso);
  return Number.isNaN(at.getTime()) ? "—" : CLOCK.format(at);
}

/** A length of time, short: `42s`, `3m 5s`, `2h 10m` (display.py's `duration` writes the same). */
export function durationText(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}
