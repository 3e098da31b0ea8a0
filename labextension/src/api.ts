/**
 * Requests to the jupyter_dw server extension (`{base_url}dw/api/`), typed with the schemas
 * generated from `jupyter_dw/openapi.yaml` (`npm run generate` writes `openapi.d.ts`).
 */
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { components } from './openapi';

type Schemas = components['schemas'];
export type Version = Schemas['Version'];
export type Context = Schemas['Context'];
export type ClusterPolicy = Schemas['ClusterPolicy'];
export type Queues = Schemas['Queues'];
export type Queue = Schemas['Queue'];
export type QueueResource = Schemas['QueueResource'];
export type Cluster = Schemas['Cluster'];
export type Timeline = Schemas['Timeline'];
export type ClusterList = Schemas['ClusterList'];
export type ClusterState = Schemas['ClusterState'];
export type Milestone = Schemas['Milestone'];
export type ClusterUsage = Schemas['ClusterUsage'];
export type QueueHolding = Schemas['QueueHolding'];
export type ClusterSpec = Schemas['ClusterSpec'];
export type Fit = Schemas['Fit'];
export type Suggestion = Schemas['Suggestion'];
export type Deleted = Schemas['Deleted'];
export type ErrorBody = Schemas['Error'];
export type EventMessage = Schemas['EventMessage'];
export type SnapshotMessage = Schemas['SnapshotMessage'];
export type QueuesMessage = Schemas['QueuesMessage'];
export type QueueMessage = Schemas['QueueMessage'];
export type PositionsMessage = Schemas['PositionsMessage'];
export type ClusterMessage = Schemas['ClusterMessage'];
export type Workload = Schemas['Workload'];
export type Placement = Schemas['Placement'];
export type Dispatcher = Schemas['Dispatcher'];
export type WorkloadList = Schemas['WorkloadList'];
export type WorkloadMessage = Schemas['WorkloadMessage'];
export type Freshness = Schemas['Freshness'];
export type WatchHealth = Schemas['WatchHealth'];
export type ScaleChange = Schemas['ScaleChange'];
export type ScaleRequest = Schemas['ScaleRequest'];
export type ScaleFit = Schemas['ScaleFit'];
export type ScaleResult = Schemas['ScaleResult'];
/**
 * Not a RayJob resource: one job Ray runs on a running cluster, submitted through its head's
 * Jobs API (`GET clusters/{name}/jobs`). The KubeRay resource named RayJob is `KubeRayJob`.
 */
export type RayJob = Schemas['RayJob'];
export type JobList = Schemas['JobList'];
export type JobStopped = Schemas['JobStopped'];
export type JobsMessage = Schemas['JobsMessage'];
export type JobLogsMessage = Schemas['JobLogsMessage'];
export type WatchJobsRequest = Schemas['WatchJobsRequest'];
/** The RayJob workload kind: KubeRay's resource, a Ray program with its own cluster. */
export type KubeRayJob = Schemas['KubeRayJob'];
export type KubeRayJobRequest = Schemas['KubeRayJobRequest'];
export type KubeRayJobCreateRequest = Schemas['KubeRayJobCreateRequest'];
export type KubeRayJobMessage = Schemas['KubeRayJobMessage'];
/** A Kubeflow Trainer TrainJob. */
export type TrainJob = Schemas['TrainJob'];
/** A workload kind as the snapshot's `kinds` lists it: what the sidebar serves it by. */
export type WorkloadKind = Schemas['WorkloadKind'];

export const API_PATH = 'dw/api';
/** `POST clusters` and `POST rayjobs`: the header that makes a create safe to retry. */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/** An answer with an error status from the server extension (or from jupyter_server). */
export class DWRequestError extends Error {
  constructor(
    readonly status: number,
    readonly body: ErrorBody | null,
    message?: string
  ) {
    super(message ?? body?.error ?? `HTTP ${status}`);
    this.name = 'DWRequestError';
  }

  /** The machine-readable code (`invalid_spec`, `forbidden`, ...), if any. */
  get code(): string | null {
    return this.body?.code ?? null;
  }

  /** Per-field messages of a 400 (`{field: message}`), empty if none. */
  get fieldErrors(): Record<string, string> {
    return this.body?.errors ?? {};
  }
}

/** The server could not be reached at all (network, server down). */
export class DWNetworkError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DWNetworkError';
  }
}

/** What the model needs of a WebSocket (the browser's, or a test's stand-in). */
export interface ISocket {
  onopen: ((event: unknown) => void) | null;
  onmessage: ((event: { data: unknown }) => void) | null;
  onclose: ((event: { code: number; reason: string }) => void) | null;
  onerror: ((event: unknown) => void) | null;
  /** A message to the server (only `watch_jobs`). */
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/** The REST API and the events socket. */
export interface IDWApi {
  version(): Promise<Version>;
  context(): Promise<Context>;
  queues(): Promise<Queues>;
  clusters(): Promise<ClusterList>;
  fit(spec: ClusterSpec, signal?: AbortSignal): Promise<Fit>;
  /** `idempotencyKey`: one per user action, the same on its retries (`Idempotency-Key`). */
  create(spec: ClusterSpec, idempotencyKey?: string): Promise<Cluster>;
  remove(name: string): Promise<Deleted>;
  /** `POST clusters/{name}/scale`: pin at `workers` (null: back to the Ray autoscaler). */
  scale(name: string, workers: number | null, dryRun?: boolean): Promise<ScaleResult>;
  /** `POST clusters/{name}/stop`: stop an admitted cluster, keeping it (quota freed). */
  stop(name: string): Promise<Cluster>;
  /** `POST clusters/{name}/resume`: queue a stopped cluster again, at the size it had. */
  resume(name: string): Promise<Cluster>;
  /** `POST clusters/{name}/jobs/{job}/stop`: the server adds the cluster's Ray token. */
  stopJob(name: string, job: string): Promise<JobStopped>;
  /** `POST rayjobs/fit`: the RayJob's fit (its submitter counted as Kueue counts it). */
  fitRayJob(spec: KubeRayJobRequest, signal?: AbortSignal): Promise<Fit>;
  /** `POST rayjobs`, with an `Idempotency-Key` as for `create`. */
  createRayJob(spec: KubeRayJobCreateRequest, idempotencyKey?: string): Promise<KubeRayJob>;
  /** `DELETE <plural>/{name}` of a workload kind (`rayjobs`: its cluster, submitter and
   * Workload follow). */
  removeJob(plural: string, name: string): Promise<Deleted>;
  openEvents(): ISocket;
}

function keyHeader(idempotencyKey: string | undefined): Record<string, string> {
  return idempotencyKey ? { [IDEMPOTENCY_KEY_HEADER]: idempotencyKey } : {};
}

/** The API on a Jupyter server (`ServerConnection.makeSettings()` by default). */
export class DWApi implements IDWApi {
  constructor(readonly settings: ServerConnection.ISettings = ServerConnection.makeSettings()) {}

  version(): Promise<Version> {
    return this.request<Version>('GET', 'version');
  }

  context(): Promise<Context> {
    return this.request<Context>('GET', 'context');
  }

  queues(): Promise<Queues> {
    return this.request<Queues>('GET', 'queues');
  }

  clusters(): Promise<ClusterList> {
    return this.request<ClusterList>('GET', 'clusters');
  }

  fit(spec: ClusterSpec, signal?: AbortSignal): Promise<Fit> {
    return this.request<Fit>('POST', 'clusters/fit', spec, signal);
  }

  create(spec: ClusterSpec, idempotencyKey?: string): Promise<Cluster> {
    return this.request<Cluster>('POST', 'clusters', spec, undefined, keyHeader(idempotencyKey));
  }

  fitRayJob(spec: KubeRayJobRequest, signal?: AbortSignal): Promise<Fit> {
    return this.request<Fit>('POST', 'rayjobs/fit', spec, signal);
  }

  createRayJob(spec: KubeRayJobCreateRequest, idempotencyKey?: string): Promise<KubeRayJob> {
    const headers = keyHeader(idempotencyKey);
    return this.request<KubeRayJob>('POST', 'rayjobs', spec, undefined, headers);
  }

  removeJob(plural: string, name: string): Promise<Deleted> {
    const path = `${encodeURIComponent(plural)}/${encodeURIComponent(name)}`;
    return this.request<Deleted>('DELETE', path);
  }

  remove(name: string): Promise<Deleted> {
    return this.request<Deleted>('DELETE', `clusters/${encodeURIComponent(name)}`);
  }

  scale(name: string, workers: number | null, dryRun = false): Promise<ScaleResult> {
    const body: ScaleRequest = { workers, dry_run: dryRun };
    return this.request<ScaleResult>('POST', `clusters/${encodeURIComponent(name)}/scale`, body);
  }

  stop(name: string): Promise<Cluster> {
    return this.request<Cluster>('POST', `clusters/${encodeURIComponent(name)}/stop`);
  }

  resume(name: string): Promise<Cluster> {
    return this.request<Cluster>('POST', `clusters/${encodeURIComponent(name)}/resume`);
  }

  stopJob(name: string, job: string): Promise<JobStopped> {
    const path = `clusters/${encodeURIComponent(name)}/jobs/${encodeURIComponent(job)}/stop`;
    return this.request<JobStopped>('POST', path, {});
  }

  /** `dw/api/events`; the browser's cookies authenticate it, or the token when appended. */
  openEvents(): ISocket {
    let url = URLExt.join(this.settings.wsUrl, API_PATH, 'events');
    if (this.settings.appendToken && this.settings.token) {
      url += `?token=${encodeURIComponent(this.settings.token)}`;
    }
    return new this.settings.WebSocket(url) as unknown as ISocket;
  }

  private async request<T>(
    method: string,
    path: string,
    body?: unknown,
    signal?: AbortSignal,
    headers: Record<string, string> = {}
  ): Promise<T> {
    const url = URLExt.join(this.settings.baseUrl, API_PATH, path);
    const init: RequestInit = { method, signal, headers };
    if (body !== undefined) {
      init.body = JSON.stringify(body);
      init.headers = { ...headers, 'Content-Type': 'application/json' };
    }
    let response: Response;
    try {
      response = await ServerConnection.makeRequest(url, init, this.settings);
    } catch (error) {
      if ((error as Error).name === 'AbortError') {
        throw error;
      }
      throw new DWNetworkError(String((error as Error).message ?? error));
    }
    const text = await response.text();
    let data: unknown = null;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      data = null;
    }
    if (!response.ok) {
      const errorBody =
        data && typeof data === 'object' && 'error' in data ? (data as ErrorBody) : null;
      throw new DWRequestError(response.status, errorBody);
    }
    return data as T;
  }
}
