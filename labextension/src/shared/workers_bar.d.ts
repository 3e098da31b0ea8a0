// Types of workers_bar.js for the sidebar (labextension/src), which imports it.
import type { components } from '../openapi';

type Cluster = components['schemas']['Cluster'];

/** The fields of a REST `Cluster` (or the ClusterStatus widget's traits) the bar reads. */
export type IBarInput = Pick<
  Cluster,
  | 'workers_ready'
  | 'workers_desired'
  | 'workers_admitted'
  | 'min_workers'
  | 'max_workers'
  | 'elastic'
  | 'pinned_workers'
  | 'scale'
> &
  Partial<Pick<Cluster, 'state' | 'cluster_queue'>>;

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
