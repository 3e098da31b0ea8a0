/**
 * The jobs of one workload kind besides clusters (a RayJob, a TrainJob, any kind the server
 * lists in the snapshot's `kinds`) as the sidebar holds them: the snapshot's `<plural>` (null
 * when the server does not serve the kind), then the kind's `<word>` messages. One holder for
 * every kind, so a new kind is a new instance, not new code.
 */
import type { ClusterUsage, ErrorBody, Placement, Timeline } from './api';

/**
 * What every kind's record has (the server's `JobInfo`, the same field names in every kind's
 * REST object): what a card shows of a job whatever its kind.
 */
export interface IKindJob {
  name: string;
  owner: string | null;
  queue: string | null;
  state: string;
  reason: string | null;
  message: string | null;
  /** Kueue's waiting message in one short line; null when unknown (an older server: absent). */
  summary?: string | null;
  final: boolean;
  position_in_local_queue: number | null;
  position_in_cluster_queue: number | null;
  usage: ClusterUsage | null;
  /** Its life as a timeline bar draws it (waiting, running, its end); absent from an older server. */
  timeline?: Timeline | null;
  /** Where MultiKueue sent it (the worker cluster it runs on); absent from an older server. */
  placement?: Placement | null;
}

export class PodSetJobs<T extends IKindJob = IKindJob> {
  /** Every job of the kind, by name. */
  get all(): T[] {
    return [...this._jobs.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  get(name: string): T | undefined {
    return this._jobs.get(name);
  }

  /** Whether the server serves the kind (its CRD is installed): a list or an error came. */
  get served(): boolean {
    return this._served;
  }

  get error(): ErrorBody | null {
    return this._error;
  }

  /** The snapshot's `<plural>` and `<plural>_error`. */
  snapshot(jobs: T[] | null | undefined, error: ErrorBody | null | undefined): void {
    this._jobs = new Map((jobs ?? []).map(j => [j.name, j]));
    this._error = error ?? null;
    this._served = (jobs !== null && jobs !== undefined) || this._error !== null;
  }

  /** A change message: the job's record now, or null once it is gone. */
  change(name: string, job: T | null): void {
    if (job === null) {
      this._jobs.delete(name);
    } else {
      this._jobs.set(name, job);
    }
  }

  /** A job this sidebar just created (shown at once; its messages follow). False if known. */
  add(job: T): boolean {
    if (this._jobs.has(job.name)) {
      return false;
    }
    this._jobs.set(job.name, job);
    return true;
  }

  /** The jobs to show: all, or (`mine`) those `username` created, as for clusters. */
  visible(scope: 'mine' | 'all', username: string | null): T[] {
    if (scope === 'all' || username === null) {
      return this.all;
    }
    return this.all.filter(j => j.owner === username);
  }

  private _jobs = new Map<string, T>();
  private _error: ErrorBody | null = null;
  private _served = false;
}
