// An elastic Ray cluster's size as one bar, and the sentences that go with it: workers ready,
// admitted (quota Kueue holds now) and requested (a scale-up's slice waiting for quota, or
// workers being removed by a scale-down). Pure: fields in (the REST `Cluster`'s names, which
// are also the ClusterStatus widget's traits), numbers and words out.
//
// One source for both surfaces: the sidebar imports this file (types in workers_bar.d.ts,
// tests in labextension/test/), and the ClusterStatus widget's ESM is this file followed by
// status.js (widgets.py joins them).

/** `n workers` / `1 worker`. */
export function workersText(n) {
  return `${n} worker${n === 1 ? "" : "s"}`;
}

/** `position 1 in the queue (3 in team-cq)` from 0-based positions; null when unknown. */
export function positionText(local, inClusterQueue, clusterQueue) {
  if (local === null || local === undefined) return null;
  let text = `position ${local + 1} in the queue`;
  if (inClusterQueue !== null && inClusterQueue !== undefined) {
    text += ` (${inClusterQueue + 1} in ${clusterQueue || "its ClusterQueue"})`;
  }
  return text;
}

function who(scale, mine) {
  if (scale.requested_by === "autoscaler") return `the Ray autoscaler asked for ${workersText(scale.to)}`;
  return mine ? `you pinned ${workersText(scale.to)}` : `pinned at ${workersText(scale.to)}`;
}

/**
 * The bar and its words. `c` holds `workers_ready`, `workers_desired`, `workers_admitted`,
 * `min_workers`, `max_workers`, `elastic`, `pinned_workers`, `scale` (and, for the
 * position, `cluster_queue`); `mine`: the viewer is the one who pins (the sidebar's "you").
 *
 * Segments, left to right, in workers: `ready`, `starting` (admitted, not ready yet),
 * `waiting` (asked for, waiting for quota: a queued scale-up's gated pods) and `removing`
 * (ready beyond what is admitted: a scale-down in progress).
 */
export function workersBar(c, mine = false) {
  const ready = Math.max(0, c.workers_ready || 0);
  const desired = Math.max(0, c.workers_desired || 0);
  const admitted = c.workers_admitted === null || c.workers_admitted === undefined ? null : c.workers_admitted;
  const scale = c.scale || null;
  const held = admitted === null ? desired : admitted;
  const asked = scale && scale.state === "queued" ? scale.to : desired;
  const segments = {
    ready: Math.min(ready, held),
    starting: Math.max(0, held - ready),
    waiting: admitted === null ? 0 : Math.max(0, asked - held),
    removing: Math.max(0, ready - held),
  };
  const total = segments.ready + segments.starting + segments.waiting + segments.removing;

  let summary;
  if (segments.removing > 0) {
    summary = `${ready} ready · scaling down to ${held}: ${segments.removing} being removed`;
  } else if (admitted === null) {
    summary = `${ready} ready of ${desired} requested`;
  } else {
    summary = `${ready} ready of ${held} admitted`;
    if (segments.waiting > 0) summary += ` · ${segments.waiting} more waiting for quota`;
  }

  // Who sizes the cluster and what its change in flight is doing.
  let request = null;
  if (scale) {
    const phase = {
      queued: "waiting for quota",
      admitted: `admitted, ${segments.starting} starting`,
      "scaling-down": `scaling down from ${scale.from}`,
    }[scale.state] || scale.state;
    request = `${who(scale, mine)}: ${phase}`;
  }
  const range = `${c.min_workers}–${c.max_workers}`;
  const owner = c.pinned_workers === null || c.pinned_workers === undefined
    ? `the Ray autoscaler sizes it within ${range}`
    : `${mine ? "you pinned it at" : "pinned at"} ${workersText(c.pinned_workers)} (range ${range})`;

  const queued = scale && scale.state === "queued";
  const pending = queued && (scale.reason || scale.message)
    ? `${scale.reason || ""}${scale.reason && scale.message ? ": " : ""}${scale.message || ""}`
    : null;
  const position = queued
    ? positionText(scale.position_in_local_queue, scale.position_in_cluster_queue, c.cluster_queue)
    : null;
  return {
    elastic: !!c.elastic,
    total,
    segments,
    summary,
    request,
    owner,
    pending,
    position,
  };
}

/** Widths in percent of the bar's full length, in segment order. */
export function barWidths(bar) {
  const total = Math.max(1, bar.total);
  const out = {};
  for (const [kind, count] of Object.entries(bar.segments)) out[kind] = (count / total) * 100;
  return out;
}

/**
 * The stepper's bounds and start value: the pinned size, else the size a change in flight
 * asks for, else what the RayCluster asks for now; within `[min_workers, max_workers]`.
 */
export function stepperStart(c) {
  const scale = c.scale || null;
  const value = c.pinned_workers ?? (scale ? scale.to : c.workers_desired);
  return { min: c.min_workers, max: c.max_workers, value: Math.min(c.max_workers, Math.max(c.min_workers, value)) };
}

/** Whether the card or widget offers the stepper: an elastic cluster holding its quota. */
export function canScale(c) {
  return !!c.elastic && (c.state === "ready" || c.state === "admitted" || c.state === "starting");
}

/**
 * What a scale's dry run says, as one sentence: the server's fit for a scale-up (e.g. "6
 * workers: must wait, 1 CPU short in flavor X; 5 would start now"); for a scale-down (no
 * fit) what is removed; `workers` null: the size goes back to the autoscaler.
 */
export function proposalText(result, workers) {
  if (result.fit) return result.fit.message;
  const c = result.cluster;
  if (workers === null) return `the Ray autoscaler sizes it within ${c.min_workers}–${c.max_workers}`;
  const from = c.workers_admitted ?? c.workers_desired;
  if (workers < from) {
    return `${workersText(workers)}: ${workersText(from - workers)} removed, their quota freed at once`;
  }
  return `${workersText(workers)}: no change in quota`;
}

/**
 * What a scale that was made says (the new size arrives with the cluster's next change):
 * "Pinned at 6 workers", with the fit's message when the scale-up must wait; `workers` null:
 * the size is the autoscaler's again.
 */
export function appliedText(result, workers) {
  const c = result.cluster;
  if (workers === null) return `Given back to the Ray autoscaler (${c.min_workers}–${c.max_workers})`;
  const fit = result.fit;
  return `Pinned at ${workersText(workers)}${fit && fit.verdict !== "fits-now" ? ` — ${fit.message}` : ""}`;
}
