import type { Workload } from './api';

/**
 * Rows a queue of "In my queues" shows before "Show all": the first ones in Kueue's order
 * (those holding quota, then by position) and every one of this identity's. A namespace on a
 * shared cluster can hold thousands of Workloads; a row for each made every change of the
 * panel lay out tens of thousands of elements again (benchmarks/bench_sidebar.py --scale).
 * The kernel's QueueBoard chooses its rows the same way (jupyter_dw/domain/workload_rows.py).
 */
export const WORKLOADS_SHOWN = 5;

/** The rows shown of `workloads` while the queue is not expanded (their order kept). */
export function firstAndMine(
  workloads: readonly Workload[],
  isMine: (w: Workload) => boolean,
  count: number = WORKLOADS_SHOWN
): readonly Workload[] {
  if (workloads.length <= count) {
    return workloads;
  }
  return workloads.filter((w, i) => i < count || isMine(w));
}
