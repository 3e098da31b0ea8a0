// Types of workers_bar.js for the sidebar (labextension/src), which imports it.

/** The fields of a REST `Cluster` (or the ClusterStatus widget's traits) the bar reads. */
export interface IBarInput {
  state?: string | null;
  workers_ready: number;
  workers_desired: number;
  workers_admitted: number | null;
  min_workers: number;
  max_workers: number;
  elastic: boolean;
  pinned_workers: number | null;
  cluster_queue?: string | null;
  scale: {
    state: 'queued' | 'admitted' | 'scaling-down';
    from: number;
    to: number;
    requested_by: 'user' | 'autoscaler';
    reason: string | null;
    message: string | null;
    position_in_local_queue: number | null;
    position_in_cluster_queue: number | null;
  } | null;
}

export interface IBarSegments {
  ready: number;
  starting: number;
  waiting: number;
  removing: number;
}

export interface IWorkersBar {
  elastic: boolean;
  /** The bar's full length in workers. */
  total: number;
  segments: IBarSegments;
  /** "4 ready of 4 admitted · 2 more waiting for quota". */
  summary: string;
  /** The change in flight: who asked and its phase; null when none. */
  request: string | null;
  /** Who owns the size: the autoscaler within the range, or a pin. */
  owner: string;
  /** A queued scale-up's Kueue reason and message. */
  pending: string | null;
  /** A queued scale-up's position ("position 1 in the queue"). */
  position: string | null;
}

export function workersText(n: number): string;
export function positionText(
  local: number | null | undefined,
  inClusterQueue: number | null | undefined,
  clusterQueue: string | null | undefined
): string | null;
export function workersBar(c: IBarInput, mine?: boolean): IWorkersBar;
export function barWidths(bar: IWorkersBar): IBarSegments;
export function stepperStart(c: IBarInput): {
  min: number;
  max: number;
  value: number;
};
export function canScale(c: IBarInput): boolean;
export function appliedText(
  result: { fit: { verdict: string; message: string } | null; cluster: IBarInput },
  workers: number | null
): string;
export function proposalText(
  result: { fit: { message: string } | null; cluster: IBarInput },
  workers: number | null
): string;
