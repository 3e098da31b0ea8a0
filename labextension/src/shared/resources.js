// Kubernetes quantities and resource names as every surface the browser draws shows them:
// the sidebar imports this file (types in resources.d.ts), the widgets' ESM includes it
// (widgets.esm), and usage_bar.js imports it.
const SUFFIXES = {
  n: 1e-9, u: 1e-6, m: 1e-3, "": 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60,
};

/** A Kubernetes quantity string as a number (for bar widths and words); NaN if unreadable. */
export function parseQuantity(quantity) {
  if (quantity === null || quantity === undefined) return NaN;
  const match = /^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)$/.exec(String(quantity).trim());
  if (!match || !(match[2] in SUFFIXES)) return NaN;
  return parseFloat(match[1]) * SUFFIXES[match[2]];
}

/** Display name of a resource: CPU, Memory, GPU, else its own name. */
export function resourceLabel(resource) {
  if (resource === "cpu") return "CPU";
  if (resource === "memory") return "Memory";
  if (resource.endsWith("/gpu")) return "GPU";
  return resource;
}

/** cpu, memory, GPUs, then the rest: the order bars are shown in. */
export function resourceOrder(resource) {
  if (resource === "cpu") return 0;
  if (resource === "memory") return 1;
  if (resource.endsWith("/gpu")) return 2;
  return 3;
}
