/** Stand-ins shared by the sidebar's unit tests: a socket, a clock and a cluster. */
import type {
  Cluster,
  EventMessage,
  ISocket,
  KubeRayJob,
  TrainJob,
  Workload,
  WorkloadKind
} from '../src/api';
import type { IClock } from '../src/model';

export class FakeSocket implements ISocket {
  onopen: ((event: unknown) => void) | null = null;
  onmessage: ((event: { data: unknown }) => void) | null = null;
  onclose: ((event: { code: number; reason: string }) => void) | null = null;
  onerror: ((event: unknown) => void) | null = null;
  closed = false;
  /** What the model sent the server. */
  sent: string[] = [];
  /** A message from the server. */
  deliver(message: EventMessage): void {
    this.onmessage?.({ data: JSON.stringify(message) });
  }
  send(data: string): void {
    this.sent.push(data);
  }
  drop(): void {
    this.closed = true;
    this.onclose?.({ code: 1006, reason: '' });
  }
  close(): void {
    this.closed = true;
  }
}

export class FakeClock implements IClock {
  time = 1_000_000;
  timers: { at: number; fn: () => void; id: number }[] = [];
  private next = 0;
  now(): number {
    return this.time;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.next;
    this.timers.push({ at: this.time + ms, fn, id });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter(t => t.id !== handle);
  }
  advance(ms: number): void {
    this.time += ms;
    const due = this.timers.filter(t => t.at <= this.time);
    this.timers = this.timers.filter(t => t.at > this.time);
    due.forEach(t => t.fn());
  }
  pendingDelays(): number[] {
    return this.timers.map(t => t.at - this.time);
  }
}

export const LIVE = { state: 'live', reason: null, since: null } as const;

export function cluster(name: string, extra: Partial<Cluster> = {}): Cluster {
  return {
    name,
    namespace: 'ns',
    queue: 'team',
    state: 'queued',
    reason: 'Pending',
    message: null,
    created: null,
    workload: null,
    cluster_queue: 'cq',
    quota_reserved: false,
    admitted: false,
    admitted_at: null,
    flavors: [],
    pod_set_flavors: {},
    head_ready: false,
    workers_ready: 0,
    workers_desired: 2,
    workers_admitted: null,
    min_workers: 2,
    max_workers: 2,
    elastic: false,
    pinned_workers: null,
    scale: null,
    dashboard: { service: `${name}-head-svc`, port: 8265 },
    position_in_local_queue: 0,
    position_in_cluster_queue: 0,
    admission_checks: [],
    dashboard_url: `/dw/ray/${name}/`,
    dashboard_note: null,
    placement: null,
    ray_address: `ray://${name}-head-svc.ns.svc:10001`,
    owner: 'me',
    pods: [],
    freshness: LIVE,
    ...extra
  };
}

export function workload(name: string, extra: Partial<Workload> = {}): Workload {
  return {
    name,
    namespace: 'ns',
    owner: { kind: 'Job', api_group: 'batch', name },
    queue: 'team',
    cluster_queue: null,
    priority: { class_name: null, value: 0, source: null },
    state: 'queued',
    reason: 'Pending',
    message: 'insufficient unused quota',
    quota_reserved: false,
    admitted: false,
    created: '2026-11-24T10:00:00Z',
    since: '2026-11-24T10:00:00Z',
    resources: {},
    requests: { cpu: '1' },
    position_in_local_queue: null,
    position_in_cluster_queue: null,
    preempted_by: null,
    ...extra
  };
}

/** The snapshot's `kinds`, as today's server lists them. */
export const KINDS: WorkloadKind[] = [
  { plural: 'rayjobs', word: 'rayjob', kind: 'RayJob', group: 'ray.io' },
  { plural: 'trainjobs', word: 'trainjob', kind: 'TrainJob', group: 'trainer.kubeflow.org' }
];

export function rayjob(name: string, extra: Partial<KubeRayJob> = {}): KubeRayJob {
  return {
    name,
    namespace: 'ns',
    owner: 'me',
    queue: 'team',
    priority: null,
    submission_mode: 'K8sJobMode',
    entrypoint: 'python train.py',
    state: 'queued',
    reason: 'Pending',
    message: 'insufficient unused quota',
    final: false,
    deployment_status: null,
    job_status: null,
    job_id: null,
    cluster: null,
    workload: `rayjob-${name}-abcde`,
    position_in_local_queue: 0,
    position_in_cluster_queue: 0,
    admitted_at: null,
    resources: {},
    requests: { cpu: '2500m' },
    created: '2026-11-24T10:00:00Z',
    start_time: null,
    end_time: null,
    usage: null,
    ...extra
  };
}

export function trainjob(name: string, extra: Partial<TrainJob> = {}): TrainJob {
  return {
    name,
    namespace: 'ns',
    owner: 'me',
    queue: 'team',
    priority: null,
    runtime: 'torch-distributed',
    num_nodes: 2,
    state: 'queued',
    reason: 'Pending',
    message: 'insufficient unused quota',
    final: false,
    jobs_ready: 0,
    jobs_succeeded: 0,
    jobs_failed: 0,
    workload: `trainjob-${name}-abcde`,
    position_in_local_queue: 0,
    position_in_cluster_queue: 0,
    admitted_at: null,
    resources: {},
    requests: { cpu: '2' },
    created: '2026-11-24T10:00:00Z',
    end_time: null,
    usage: null,
    ...extra
  };
}

/**
 * A workload kind's events message (`type` its `word`) about job `name`: its record, or null
 * once deleted; `cause` the job itself unless another object's change (its Workload's) said so.
 */
export function kindMessage(
  word: string,
  kind: string,
  name: string,
  event: 'ADDED' | 'MODIFIED' | 'DELETED',
  record: unknown,
  cause: { kind: string; name: string } = { kind, name }
): EventMessage {
  return {
    type: word,
    event,
    name,
    cause: { ...cause, event },
    [word]: record
  } as unknown as EventMessage;
}
