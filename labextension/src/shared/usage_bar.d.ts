// Types of usage_bar.js for the sidebar (labextension/src), which imports it.

/** A resource's `{held, used}` as REST's `ResourceUse` (quantity strings). */
export interface IResourceUse {
  held: string;
  used: string | null;
}

/** The fields of REST's `ClusterUsage` (with `idle_since`) the words are made from. */
export interface IUsageInput {
  resources: Record<string, IResourceUse>;
  reason: string | null;
  ray: {
    resources: Record<string, { used: number; total: number }> | null;
    jobs_running: number | null;
    jobs_pending: number | null;
    actors_alive: number | null;
  } | null;
  ray_reason: string | null;
  idle: boolean | null;
  idle_basis: 'ray' | 'metrics' | null;
  idle_since: string | null;
  idle_action?: {
    action: 'stop' | 'delete';
    at: string;
    idle_seconds: number;
    waiting: number;
    warning: boolean;
    held_back: boolean;
  } | null;
}

export interface IUsageRow {
  resource: string;
  label: string;
  held: string;
  used: string | null;
  /** The bar's fill, 0–1; null when the use is unknown. */
  share: number | null;
  /** "CPU 1.4 of 4 used", or "CPU 4 held" when the use is unknown. */
  text: string;
  /** Why the use is unknown (the server's reason); null when known. */
  unknown: string | null;
}

export function amountText(resource: string, quantity: string | null | undefined): string;
export function usageRows(usage: IUsageInput | null | undefined): IUsageRow[];
export function heldWords(resources: Record<string, IResourceUse>, key?: 'held' | 'used'): string;
export function idleText(usage: IUsageInput | null | undefined, now?: number): string | null;
export function ruleText(usage: IUsageInput | null | undefined): string | null;
export function rayText(usage: IUsageInput | null | undefined): string | null;
export function holdingText(
  queue: string,
  holding: { clusters: number; resources: Record<string, IResourceUse> } | null | undefined
): string | null;
