// One way to write a time of day on every surface the browser draws (the sidebar, and the
// ClusterStatus, QueueBoard and JobView widgets): the reader's locale and time zone, with
// seconds. The sidebar imports this file; the widgets' ESM includes it (widgets.esm).
const CLOCK = { hour: "2-digit", minute: "2-digit", second: "2-digit" };

export function clockTime(iso) {
  const at = iso instanceof Date ? iso : new Date(iso);
  return Number.isNaN(at.getTime()) ? "—" : at.toLocaleTimeString(undefined, CLOCK);
}
