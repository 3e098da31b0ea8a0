// What a Ray cluster uses against what it holds, in words and bar widths, for the sidebar's
// card, the ClusterStatus widget and the queue lines (sidebar and QueueBoard). Pure: the REST
// `usage` (ClusterUsage + idle_since) and `QueueHolding` in, words out. Nothing is computed
// here: the server sums and decides idle once (core/usage.py, core/holdings.py); this file
// only words it, and an unknown use is said with its reason, never drawn as a zero.
//
// One source for both surfaces: the sidebar imports this file (types in usage_bar.d.ts, tests
// in labextension/test/), the widgets' ESM includes it after resources.js and clock.js
// (widgets.esm drops the imports below, whose files it includes).
import { parseQuantity, resourceLabel, resourceOrder } from "./resources.js";
import { clockTime } from "./clock.js";

const BINARY_UNITS = [["Ti", 2 ** 40], ["Gi", 2 ** 30], ["Mi", 2 ** 20], ["Ki", 2 ** 10]];

function trimmed(x) {
  const digits = x >= 100 ? 0 : x >= 1 ? 1 : 2;
  return String(Number(x.toFixed(digits)));
}

/** A quantity in short words: CPU `1.4` (not `1400m`), memory `2.3Gi`; as given if unreadable. */
export function amountText(resource, quantity) {
  const n = parseQuantity(quantity);
  if (Number.isNaN(n)) return quantity === null || quantity === undefined ? "?" : String(quantity);
  if (resource === "memory") {
    for (const [unit, size] of BINARY_UNITS) if (n >= size) return `${trimmed(n / size)}${unit}`;
  }
  // Under a hundredth of a core, millicores: a quiet pod's 2m is not "0".
  if (resource === "cpu" && n > 0 && n < 0.01) return `${Math.max(1, Math.round(n * 1000))}m`;
  return trimmed(n);
}

function sorted(resources) {
  return Object.keys(resources || {}).sort(
    (a, b) => resourceOrder(a) - resourceOrder(b) || a.localeCompare(b),
  );
}

/** Why a resource's use is unknown, in words: the server's reason. */
function unknownReason(usage, resource) {
  if (resource.endsWith("/gpu")) return usage.ray_reason || "only Ray tells a GPU's use, and it has not yet";
  return usage.reason || "not measured yet";
}

/**
 * One row per resource, CPU, memory, GPUs, then the rest: `text` "CPU 1.4 of 4 used" (a GPU's
 * use is Ray's: "GPU 1 of 2 used by Ray"), `share` the bar's fill (0–1); with the use unknown,
 * `text` "CPU 4 held", `share` null and `unknown` the reason.
 */
export function usageRows(usage) {
  if (!usage) return [];
  return sorted(usage.resources).map((resource) => {
    const { held, used } = usage.resources[resource];
    const label = resourceLabel(resource);
    const heldText = amountText(resource, held);
    if (used === null || used === undefined) {
      return { resource, label, held: heldText, used: null, share: null, text: `${label} ${heldText} held`, unknown: unknownReason(usage, resource) };
    }
    const whole = parseQuantity(held);
    const part = parseQuantity(used);
    const share = whole > 0 && !Number.isNaN(part) ? Math.min(1, Math.max(0, part / whole)) : 0;
    const by = resource.endsWith("/gpu") ? " by Ray" : "";
    const usedText = amountText(resource, used);
    return { resource, label, held: heldText, used: usedText, share, text: `${label} ${usedText} of ${heldText} used${by}`, unknown: null };
  });
}

/** "4 CPU and 1 GPU": the CPUs and GPUs in `resources` (`{name: {held}}`, or `used` with `key`). */
export function heldWords(resources, key = "held") {
  const parts = sorted(resources)
    .filter((r) => r === "cpu" || r.endsWith("/gpu"))
    .map((r) => `${amountText(r, resources[r][key])} ${resourceLabel(r)}`);
  return parts.length > 1 ? `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}` : parts.join("");
}

/**
 * "Idle 42 min (since 10:02:00), holding 4 CPU and 1 GPU" when the server says the cluster is
 * idle (`usage.idle`), else null; "by CPU use" when Ray could not be asked (`idle_basis`).
 */
export function idleText(usage, now = Date.now()) {
  if (!usage || usage.idle !== true) return null;
  const since = usage.idle_since ? Date.parse(usage.idle_since) : NaN;
  const when = Number.isNaN(since)
    ? "Idle"
    : `Idle ${Math.max(0, Math.floor((now - since) / 60000))} min (since ${clockTime(usage.idle_since)})`;
  const holding = heldWords(usage.resources);
  const basis = usage.idle_basis === "metrics" ? " — by CPU use (Ray not asked)" : "";
  return `${when}${holding ? `, holding ${holding}` : ""}${basis}`;
}

/**
 * The administrator's idle rule on this idle cluster (`usage.idle_action`, decided by the
 * server): "Will be stopped at 14:02 unless used: 2 workloads wait for quota" once the warning
 * is due, the time it acts before that, and that it holds back while nobody waits; else null.
 */
export function ruleText(usage) {
  const action = usage && usage.idle_action;
  if (!action) return null;
  const done = action.action === "delete" ? "deleted" : "stopped";
  const at = clockTime(action.at);
  if (action.held_back) {
    return `The idle rule would have ${done} it at ${at}; it waits while no workload needs the quota`;
  }
  const waiting = `${action.waiting} workload${action.waiting === 1 ? "" : "s"} wait${action.waiting === 1 ? "s" : ""} for quota`;
  return action.warning
    ? `Will be ${done} at ${at} unless used: ${waiting}`
    : `The idle rule will ${action.action} it at ${at} if it stays idle (${waiting})`;
}

function count(n, one, many) {
  return n === null || n === undefined ? `${many} unknown` : `${n} ${n === 1 ? one : many}`;
}

/** "Ray: 0 of 4 CPU in use, 0 jobs running, 0 actors"; Ray's reason when it did not answer. */
export function rayText(usage) {
  if (!usage) return null;
  const ray = usage.ray;
  if (!ray) return usage.ray_reason ? `Ray: ${usage.ray_reason}` : null;
  const parts = [];
  for (const name of ["CPU", "GPU"]) {
    const r = ray.resources ? ray.resources[name] : undefined;
    if (r && (name === "CPU" || r.total > 0)) parts.push(`${trimmed(r.used)} of ${trimmed(r.total)} ${name} in use`);
  }
  parts.push(`${count(ray.jobs_running, "job", "jobs")} running`);
  if (ray.jobs_pending) parts.push(`${count(ray.jobs_pending, "job", "jobs")} pending`);
  parts.push(count(ray.actors_alive, "actor", "actors"));
  return `Ray: ${parts.join(", ")}`;
}

/**
 * The queue's line: "Your clusters hold 12 CPU and 2 GPU of team-a; they use 1.4 CPU and 0 GPU
 * now" from the server's `QueueHolding`; a use it does not know is said so. Null when none of
 * yours holds anything there.
 */
export function holdingText(queue, holding) {
  if (!holding || !holding.clusters) return null;
  const held = heldWords(holding.resources);
  const known = {};
  const unknown = [];
  for (const r of sorted(holding.resources)) {
    if (r !== "cpu" && !r.endsWith("/gpu")) continue;
    if (holding.resources[r].used === null) unknown.push(resourceLabel(r));
    else known[r] = holding.resources[r];
  }
  const one = holding.clusters === 1;
  const any = Object.keys(known).length > 0;
  let use = any ? `${one ? "it uses" : "they use"} ${heldWords(known, "used")} now` : `${one ? "its" : "their"} use is unknown now`;
  if (unknown.length && any) use += ` (${unknown.join(", ")} use unknown)`;
  const who = one ? "Your cluster holds" : `Your ${holding.clusters} clusters hold`;
  return `${who} ${held} of ${queue}; ${use}`;
}
