/**
 * The Ray jobs the sidebar shows: the job list of each ready cluster and the log of the one
 * selected job, from the events socket (`watch_jobs` sent by the model, `jobs` and `job_logs`
 * messages back). Pure state: the model sends and applies; views read.
 */
import type { ErrorBody, JobLogsMessage, JobsMessage, RayJob, WatchJobsRequest } from './api';

/** The end of a log kept in the page (the whole log: `GET .../logs` or `job.logs()`). */
export const MAX_LOG_CHARS = 200_000;
export const TERMINAL_JOB_STATES = new Set(['SUCCEEDED', 'FAILED', 'STOPPED']);

export interface IJobList {
  jobs: RayJob[] | null;
  error: ErrorBody | null;
}

export interface IJobLog {
  cluster: string;
  job: string;
  text: string;
  /** The job has ended and its log is complete. */
  end: boolean;
  error: ErrorBody | null;
}

export class JobsState {
  /** The clusters followed (ready ones), in order. */
  get clusters(): string[] {
    return this._clusters;
  }

  /** A cluster's job list; undefined before its first message. */
  list(cluster: string): IJobList | undefined {
    return this._lists.get(cluster);
  }

  get selected(): { cluster: string; job: string } | null {
    return this._selected;
  }

  /** The selected job's log, once its first message came. */
  get log(): IJobLog | null {
    return this._log;
  }

  /** Follow exactly `clusters`; true when that changed what to ask the server. */
  setClusters(clusters: string[]): boolean {
    const sorted = [...new Set(clusters)].sort();
    if (sorted.join('\n') === this._clusters.join('\n')) {
      return false;
    }
    this._clusters = sorted;
    for (const name of [...this._lists.keys()]) {
      if (!sorted.includes(name)) {
        this._lists.delete(name);
      }
    }
    if (this._selected && !sorted.includes(this._selected.cluster)) {
      this._selected = null;
      this._log = null;
    }
    return true;
  }

  /** Show `job`'s log (null: none); true when that changed. */
  select(cluster: string, job: string | null): boolean {
    const next = job === null ? null : { cluster, job };
    if (JSON.stringify(next) === JSON.stringify(this._selected)) {
      return false;
    }
    this._selected = next;
    this._log = null;
    return true;
  }

  /** The `watch_jobs` message that asks for what is followed now. */
  request(): WatchJobsRequest {
    return { type: 'watch_jobs', clusters: this._clusters, logs: this._selected };
  }

  apply(message: JobsMessage | JobLogsMessage): void {
    if (message.type === 'jobs') {
      if (this._clusters.includes(message.cluster)) {
        this._lists.set(message.cluster, { jobs: message.jobs, error: message.error });
      }
      return;
    }
    const s = this._selected;
    if (!s || s.cluster !== message.cluster || s.job !== message.job) {
      return; // an answer about a job no longer selected
    }
    const before = message.reset || !this._log ? '' : this._log.text;
    const text = (before + message.text).slice(-MAX_LOG_CHARS);
    this._log = { cluster: s.cluster, job: s.job, text, end: message.end, error: message.error };
  }

  private _clusters: string[] = [];
  private _lists = new Map<string, IJobList>();
  private _selected: { cluster: string; job: string } | null = null;
  private _log: IJobLog | null = null;
}

/** How long a job has run (ms), or ran once ended; null before it started. */
export function jobDuration(job: RayJob, now: number): number | null {
  if (job.start_time === null) {
    return null;
  }
  return Math.max(0, (job.end_time ?? now) - job.start_time);
}
