/**
 * The sidebar's state: the version handshake, then queues, clusters, the jobs of every workload
 * kind the server lists (RayJobs, TrainJobs, ...) and Workloads from the `events` socket (a
 * snapshot, then one message per change), with reconnection (backoff, then a fresh snapshot).
 * Views listen to `changed` and read; they never fetch on their own.
 */
import { ISignal, Signal } from '@lumino/signaling';

import {
  Cluster,
  ClusterPolicy,
  ClusterSpec,
  DWRequestError,
  ErrorBody,
  EventMessage,
  Fit,
  IDWApi,
  ISocket,
  KubeRayJob,
  KubeRayJobCreateRequest,
  KubeRayJobRequest,
  Milestone,
  PositionsMessage,
  QueueHolding,
  Queues,
  ScaleResult,
  SnapshotMessage,
  WatchHealth,
  Workload,
  WorkloadKind
} from './api';
import { JobsState } from './jobs';
import { RecentActions, Transition, UserAction, crossedMilestones } from './notices';
import { IKindJob, PodSetJobs } from './podjobs';
import { keepEqual } from './sharing';

/** How the frontend and the server extension agree. */
export type Handshake =
  | { kind: 'pending' }
  | { kind: 'ok'; serverVersion: string }
  | { kind: 'mismatch'; serverVersion: string; frontendVersion: string }
  | { kind: 'missing' }
  | { kind: 'error'; message: string };

/** The events socket: `connecting` before the first snapshot, `live` after it. */
export type Connection = 'idle' | 'connecting' | 'live' | 'reconnecting' | 'stopped';

export interface IClock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const browserClock: IClock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: handle => clearTimeout(handle as ReturnType<typeof setTimeout>)
};

export interface IBackoff {
  /** First delay (ms). */
  initial: number;
  /** Largest delay (ms). */
  max: number;
}

export const DEFAULT_BACKOFF: IBackoff = { initial: 500, max: 10000 };

/** The RayJob's plural: the one workload kind the sidebar's form creates. */
export const RAYJOBS = 'rayjobs';

/** A queue's Workloads in the server's order: those holding quota first, then the waiting ones
 * by Kueue's position, then the rest by age. */
function workloadOrder(a: Workload, b: Workload): number {
  return (
    Number(b.quota_reserved) - Number(a.quota_reserved) ||
    (a.position_in_local_queue ?? Infinity) - (b.position_in_local_queue ?? Infinity) ||
    (a.created ?? '').localeCompare(b.created ?? '') ||
    a.name.localeCompare(b.name)
  );
}

/** A new queues answer keeping the previous answer's equal queues (see `sharing.ts`). */
function shareQueues(previous: Queues | null, fresh: Queues | null | undefined): Queues | null {
  if (previous === null || fresh === null || fresh === undefined) {
    return fresh ?? null;
  }
  return { ...fresh, queues: keepEqual(previous.queues, fresh.queues, q => q.name) };
}

/**
 * The answer with the records of `changed` in place of those of the same name (a `queue`
 * message); the other queues keep their objects. Null stays null: a `queue` message follows
 * a snapshot or a `queues` message, which set the answer first.
 */
function replaceQueues(previous: Queues | null, changed: Queues['queues']): Queues | null {
  if (previous === null || changed.length === 0) {
    return previous;
  }
  const byName = new Map(changed.map(q => [q.name, q]));
  return { ...previous, queues: previous.queues.map(q => byName.get(q.name) ?? q) };
}

/**
 * A fresh idempotency key (a random UUID v4) for one user action. `crypto.getRandomValues`
 * works in every page; `crypto.randomUUID` only in secure contexts (HTTPS or localhost).
 */
export function newIdempotencyKey(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = Array.from(bytes, b => b.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The idempotency key of one kind of create: each new request gets a fresh key; a request
 * that repeats the last failed one (the same body) sends its key again, so if that try made
 * the object after all (its answer was lost), the server answers with it instead of 409 or a
 * second object.
 */
export class RetryKey {
  /** The key to send with `body`. */
  keyFor(body: unknown): string {
    const signature = JSON.stringify(body);
    if (this._last?.body !== signature) {
      this._last = { body: signature, key: newIdempotencyKey() };
    }
    return this._last.key;
  }

  /** The request succeeded: the next one is a new action. */
  succeeded(): void {
    this._last = null;
  }

  private _last: { body: string; key: string } | null = null;
}

/** The delay before reconnect attempt `attempt` (0-based): doubling from `initial`. */
export function backoffDelay(attempt: number, backoff: IBackoff = DEFAULT_BACKOFF): number {
  return Math.min(backoff.max, backoff.initial * 2 ** Math.max(0, attempt));
}

export class DWModel {
  constructor(
    readonly api: IDWApi,
    readonly frontendVersion: string,
    readonly clock: IClock = browserClock,
    readonly backoff: IBackoff = DEFAULT_BACKOFF
  ) {}

  /** Anything changed; read the properties again. */
  get changed(): ISignal<this, void> {
    return this._changed;
  }

  /**
   * One cluster's, job's or cluster's Ray jobs' record before and after a message (and, on a
   * reconnect, the snapshot's), after it is applied: what notices are decided from
   * (notices.ts). Not for the first snapshot (nothing before it).
   */
  get transitions(): ISignal<this, Transition> {
    return this._transitions;
  }

  /** What the user did in this tab lately (their actions quiet their own notices). */
  readonly recent = new RecentActions();

  get handshake(): Handshake {
    return this._handshake;
  }
  get connection(): Connection {
    return this._connection;
  }
  get namespace(): string | null {
    return this._namespace;
  }
  /** The identity's username (`GET context`), to tell "my" clusters; null if unknown. */
  get username(): string | null {
    return this._username;
  }
  /**
   * The server's defaults and limits for a new cluster's sizes (`GET context`), which the form
   * shows; null until known (the server applies its defaults anyway).
   */
  get clusterPolicy(): ClusterPolicy | null {
    return this._clusterPolicy;
  }
  get queues(): Queues | null {
    return this._queues;
  }
  get queuesError(): ErrorBody | null {
    return this._queuesError;
  }
  get clustersError(): ErrorBody | null {
    return this._clustersError;
  }
  get positionsVisible(): boolean {
    return this._positionsVisible;
  }
  /** The last `error` message of the socket, if the server gave up on it. */
  get socketError(): ErrorBody | null {
    return this._socketError;
  }
  /**
   * Whether the server's watches follow the cluster (`health` messages); null before the
   * first snapshot. When its `freshness` is not `live`, what is shown is the last known state.
   */
  get health(): WatchHealth | null {
    return this._health;
  }
  /** Reconnections so far (snapshots received after the first). */
  get reconnects(): number {
    return this._reconnects;
  }
  get workloadsError(): ErrorBody | null {
    return this._workloadsError;
  }

  /**
   * The Workloads of LocalQueue `queue` (any kind of job), in the server's order: those
   * holding quota first, then the waiting ones by Kueue's position, then the rest by age.
   */
  workloadsIn(queue: string): readonly Workload[] {
    return this._workloadGroups().get(queue) ?? [];
  }

  /** The LocalQueues the namespace's Workloads name, sorted (a queue may not exist). */
  get workloadQueues(): string[] {
    return [...this._workloadGroups().keys()].filter(Boolean).sort();
  }

  /**
   * The Workloads grouped by queue and sorted, made once per change of the Workloads: a
   * render asks each queue's list, and at 5,000 Workloads in 200 queues a filter of all of
   * them per queue and per render cost most of the panel's time.
   */
  private _workloadGroups(): Map<string, Workload[]> {
    if (this._byQueue === null) {
      const groups = new Map<string, Workload[]>();
      for (const w of this._workloads.values()) {
        const key = w.queue ?? '';
        const group = groups.get(key);
        if (group) {
          group.push(w);
        } else {
          groups.set(key, [w]);
        }
      }
      for (const group of groups.values()) {
        group.sort(workloadOrder);
      }
      this._byQueue = groups;
    }
    return this._byQueue;
  }

  /** Whether `workload` is one of this identity's Ray clusters or jobs (of any kind). */
  isMine(workload: Workload): boolean {
    const owner = workload.owner;
    if (owner === null) {
      return false;
    }
    const kind = this._kinds.find(k => k.group === owner.api_group && k.kind === owner.kind);
    const made =
      owner.api_group === 'ray.io' && owner.kind === 'RayCluster'
        ? this._clusters.get(owner.name)
        : kind
          ? this.jobsOf(kind.plural).get(owner.name)
          : undefined;
    return made !== undefined && (this._username === null || made.owner === this._username);
  }

  /** Every cluster, by name. */
  get clusters(): Cluster[] {
    return [...this._clusters.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  cluster(name: string): Cluster | undefined {
    return this._clusters.get(name);
  }

  /** What my clusters hold and use in LocalQueue `queue`, as the server summed it (the
   * snapshot's `holdings`, then each `cluster` message's `holding`); undefined: none. */
  holding(queue: string): QueueHolding | undefined {
    return this._holdings.get(queue);
  }

  /**
   * The workload kinds the server serves jobs of (the snapshot's `kinds`), in the order the
   * sidebar lists them; empty before the first snapshot.
   */
  get kinds(): readonly WorkloadKind[] {
    return this._kinds;
  }

  /**
   * The jobs of the kind whose plural is `plural` (the snapshot's `<plural>`, then its
   * `<word>` messages); not served until a snapshot lists the kind. `T`: the kind's record.
   */
  jobsOf<T extends IKindJob = IKindJob>(plural: string): PodSetJobs<T> {
    let jobs = this._jobs.get(plural);
    if (jobs === undefined) {
      jobs = new PodSetJobs();
      this._jobs.set(plural, jobs);
    }
    // The records under a kind's plural are that kind's (the server's contract).
    return jobs as unknown as PodSetJobs<T>;
  }

  /** The RayJobs, which the form also creates. */
  get rayjobJobs(): PodSetJobs<KubeRayJob> {
    return this.jobsOf<KubeRayJob>(RAYJOBS);
  }

  /**
   * Every KubeRay RayJob of the namespace, by name (the snapshot's `rayjobs`, then `rayjob`
   * messages).
   */
  get rayjobs(): KubeRayJob[] {
    return this.rayjobJobs.all;
  }

  rayjob(name: string): KubeRayJob | undefined {
    return this.rayjobJobs.get(name);
  }

  /** Whether the server serves RayJobs (KubeRay's RayJob CRD is installed). */
  get rayjobsServed(): boolean {
    return this.rayjobJobs.served;
  }

  get rayjobsError(): ErrorBody | null {
    return this.rayjobJobs.error;
  }

  /** The jobs of one kind to show: all, or those this identity created. */
  visibleJobs<T extends IKindJob>(jobs: PodSetJobs<T>, scope: 'mine' | 'all'): T[] {
    return jobs.visible(scope, this._username);
  }

  /** Clusters to show: all of the namespace, or those whose `owner` is this identity. */
  visibleClusters(scope: 'mine' | 'all'): Cluster[] {
    if (scope === 'all' || this._username === null) {
      return this.clusters;
    }
    return this.clusters.filter(c => c.owner === this._username);
  }

  /** The handshake, then the identity, then the events socket. */
  async start(): Promise<void> {
    if (this._started) {
      return;
    }
    this._started = true;
    try {
      const { version } = await this.api.version();
      this._handshake =
        version === this.frontendVersion
          ? { kind: 'ok', serverVersion: version }
          : { kind: 'mismatch', serverVersion: version, frontendVersion: this.frontendVersion };
    } catch (error) {
      this._handshake =
        error instanceof DWRequestError && error.status === 404
          ? { kind: 'missing' }
          : { kind: 'error', message: String((error as Error).message ?? error) };
    }
    this._emit();
    if (this._handshake.kind !== 'ok' || this._disposed) {
      return;
    }
    this.connect();
    try {
      const context = await this.api.context();
      this._username = context.identity.username;
      this._clusterPolicy = context.cluster_policy;
      this._emit();
    } catch {
      // Without the identity every cluster shows ("mine" cannot be told apart); without the
      // policy the form says "server default" instead of the values.
    }
  }

  /** Open the events socket (again). */
  connect(): void {
    if (this._disposed) {
      return;
    }
    this._connection = this._everLive ? 'reconnecting' : 'connecting';
    let socket: ISocket;
    try {
      socket = this.api.openEvents();
    } catch {
      this._scheduleReconnect();
      return;
    }
    this._socket = socket;
    socket.onmessage = event => {
      if (this._socket !== socket) {
        return;
      }
      let message: EventMessage;
      try {
        message = JSON.parse(String(event.data)) as EventMessage;
      } catch {
        return;
      }
      this.apply(message);
    };
    socket.onclose = () => {
      if (this._socket !== socket) {
        return;
      }
      this._socket = null;
      this._scheduleReconnect();
    };
    socket.onerror = () => {
      // onclose follows.
    };
    this._emit();
  }

  /** Apply one events message. */
  apply(message: EventMessage): void {
    switch (message.type) {
      case 'snapshot': {
        const previous = this._everLive ? this._records() : null;
        if (this._everLive) {
          this._reconnects += 1;
        }
        this._everLive = true;
        this._attempt = 0;
        this._connection = 'live';
        this._socketError = null;
        this._namespace = message.namespace;
        this._queues = message.queues;
        this._queuesError = message.queues_error;
        this._clusters = new Map((message.clusters ?? []).map(c => [c.name, c]));
        this._clustersError = message.clusters_error;
        this._holdings = new Map(Object.entries(message.holdings ?? {}));
        this._workloads = new Map((message.workloads ?? []).map(w => [w.name, w]));
        this._byQueue = null;
        this._workloadsError = message.workloads_error;
        this._snapshotKinds(message);
        this._positionsVisible = message.positions_visible;
        this._health = message.health ?? null;
        this._watchJobs(true);
        if (previous !== null) {
          this._snapshotTransitions(previous);
        }
        break;
      }
      case 'health':
        this._health = {
          freshness: message.freshness,
          caches: message.caches,
          kueue_controller: message.kueue_controller
        };
        break;
      case 'queues':
        this._queues = shareQueues(this._queues, message.queues) ?? this._queues;
        this._queuesError = message.queues_error;
        break;
      case 'queue':
        this._queues = replaceQueues(this._queues, message.queues);
        break;
      case 'positions':
        this._applyPositions(message);
        break;
      case 'cluster': {
        const before = this._clusters.get(message.name);
        this._pending.push({
          subject: 'cluster',
          name: message.name,
          before,
          after: message.state,
          crossed: crossedMilestones(before, message.state, message.milestones ?? [])
        });
        if (message.state === null) {
          this._clusters.delete(message.name);
        } else {
          this._clusters.set(message.name, message.state);
        }
        if (message.holding) {
          const { queue, ...holding } = message.holding;
          this._holdings.set(queue, holding);
        }
        this._watchJobs(false);
        break;
      }
      case 'jobs': {
        const before = this.jobs.list(message.cluster)?.jobs;
        this.jobs.apply(message);
        const after = this.jobs.list(message.cluster);
        if (after) {
          this._pending.push({
            subject: 'job',
            cluster: message.cluster,
            before,
            after: after.jobs
          });
        }
        break;
      }
      case 'job_logs':
        this.jobs.apply(message);
        break;
      case 'workload': {
        const before = this._workloads.get(message.name);
        if (message.workload === null) {
          this._workloads.delete(message.name);
        } else {
          this._workloads.set(message.name, message.workload);
        }
        this._regroup(message.name, before, message.workload);
        break;
      }
      case 'rows':
        // Only a socket opened with `?workloads=rows` (a kernel's QueueBoard) is sent these.
        break;
      case 'error':
        this._socketError = {
          error: message.error,
          reason: message.reason,
          hint: message.hint,
          code: message.code
        };
        break;
      default:
        // A job of a workload kind changed: the message's type is the kind's word.
        this._kindMessage(message);
    }
    this._lastMessageAt = this.clock.now();
    this._emit();
    const pending = this._pending;
    this._pending = [];
    for (const transition of pending) {
      if (!this._disposed) {
        this._transitions.emit(transition);
      }
    }
  }

  /**
   * Workload `name` changed from `before` to `after` (either missing: it came or went): only
   * the lists of its queues, before and after, are made again. The other queues keep their
   * arrays, so their rows are not drawn again (views memoize on them); grouping all 5,000
   * Workloads anew on every change cost the panel most of its time per change.
   */
  private _regroup(name: string, before: Workload | undefined, after: Workload | null): void {
    if (this._byQueue === null) {
      return; // grouped whole when next read
    }
    const queues = new Set<string>();
    for (const w of [before, after]) {
      if (w) {
        queues.add(w.queue ?? '');
      }
    }
    for (const queue of queues) {
      const rest = (this._byQueue.get(queue) ?? []).filter(w => w.name !== name);
      const next = after && (after.queue ?? '') === queue ? [...rest, after] : rest;
      if (next.length === 0) {
        this._byQueue.delete(queue);
      } else {
        this._byQueue.set(queue, next.sort(workloadOrder));
      }
    }
  }

  /**
   * A `positions` message: the moved Workloads' records get their new positions; only their
   * queue's list is sorted again (at scale, one message per queue as the server's positions
   * land after the snapshot: regrouping all 5,000 Workloads for each would cost more).
   */
  private _applyPositions(message: PositionsMessage): void {
    const queue = message.queue ?? '';
    const moved = new Map<string, Workload>();
    for (const [name, [local, cluster]] of Object.entries(message.positions)) {
      const before = this._workloads.get(name);
      if (before !== undefined) {
        const after = {
          ...before,
          position_in_local_queue: local,
          position_in_cluster_queue: cluster
        };
        this._workloads.set(name, after);
        moved.set(name, after);
      }
    }
    const group = this._byQueue?.get(queue);
    if (this._byQueue === null || group === undefined) {
      this._byQueue = null;
      return;
    }
    // A new array (views memoize on it), with every moved record of this queue in it.
    const next = group.map(w => moved.get(w.name) ?? w);
    if (next.filter(w => moved.has(w.name)).length !== moved.size) {
      this._byQueue = null; // a record the grouping placed elsewhere: group again
      return;
    }
    this._byQueue.set(queue, next.sort(workloadOrder));
  }

  /** The records a snapshot replaces (to tell what changed while the socket was away). */
  private _records(): { clusters: Map<string, Cluster>; jobs: Map<string, Map<string, IKindJob>> } {
    const jobs = new Map<string, Map<string, IKindJob>>();
    for (const kind of this._kinds) {
      jobs.set(kind.plural, new Map(this.jobsOf(kind.plural).all.map(j => [j.name, j])));
    }
    return { clusters: new Map(this._clusters), jobs };
  }

  /** Each record a reconnect's snapshot changed, as if its messages had come. */
  private _snapshotTransitions(previous: ReturnType<DWModel['_records']>): void {
    for (const [name, before] of previous.clusters) {
      const after = this._clusters.get(name) ?? null;
      if (after !== before) {
        this._pending.push({
          subject: 'cluster',
          name,
          before,
          after,
          crossed: crossedMilestones(before, after)
        });
      }
    }
    for (const kind of this._kinds) {
      const holder = this.jobsOf(kind.plural);
      for (const [name, before] of previous.jobs.get(kind.plural) ?? []) {
        const after = holder.get(name) ?? null;
        if (after !== before) {
          this._pending.push({
            subject: 'kind',
            plural: kind.plural,
            kind: kind.kind,
            name,
            before,
            after
          });
        }
      }
    }
  }

  /** Remember that the user did `action` to `name` of `subject` here, now. */
  private _acted(subject: string, name: string | null | undefined, action: UserAction): void {
    if (name) {
      this.recent.note(subject, name, action, this.clock.now());
    }
  }

  /** The snapshot's kinds and each one's jobs (a kind it does not list: not served). */
  private _snapshotKinds(message: SnapshotMessage): void {
    const fields = message as unknown as Record<string, unknown>;
    this._kinds = message.kinds ?? [];
    this._byWord = new Map(this._kinds.map(k => [k.word, k.plural]));
    for (const plural of new Set([...this._jobs.keys(), ...this._kinds.map(k => k.plural)])) {
      const listed = this._kinds.some(k => k.plural === plural);
      this.jobsOf(plural).snapshot(
        listed ? (fields[plural] as IKindJob[] | null | undefined) : null,
        listed ? (fields[`${plural}_error`] as ErrorBody | null | undefined) : null
      );
    }
  }

  /** A `<word>` message: the job's record now (under `<word>`), or null once it is gone. */
  private _kindMessage(message: { type: string; name: string }): void {
    const plural = this._byWord.get(message.type);
    if (plural !== undefined) {
      const job = (message as unknown as Record<string, IKindJob | null | undefined>)[message.type];
      const holder = this.jobsOf(plural);
      const before = holder.get(message.name);
      holder.change(message.name, job ?? null);
      const kind = this._kinds.find(k => k.plural === plural)?.kind ?? plural;
      this._pending.push({
        subject: 'kind',
        plural,
        kind,
        name: message.name,
        before,
        after: job ?? null
      });
    }
  }

  /** When the last message arrived (clock ms), 0 if none. */
  get lastMessageAt(): number {
    return this._lastMessageAt;
  }

  /**
   * Create a cluster; rejects with `DWRequestError` (see `fieldErrors`). Each call sends an
   * idempotency key, the same for a repeat of the last failed one (see `RetryKey`).
   */
  async create(spec: ClusterSpec): Promise<Cluster> {
    this._acted('cluster', spec.name, 'create');
    const cluster = await this.api.create(spec, this._clusterKey.keyFor(spec));
    this._clusterKey.succeeded();
    this._acted('cluster', cluster.name, 'create');
    // The socket brings it too; showing it now makes the form's result visible at once.
    if (!this._clusters.has(cluster.name)) {
      this._clusters.set(cluster.name, cluster);
      this._emit();
    }
    return cluster;
  }

  async remove(name: string): Promise<void> {
    this._acted('cluster', name, 'delete');
    await this.api.remove(name);
  }

  /**
   * Create a RayJob, as `create` does a cluster (an idempotency key of its own); the card
   * shows it at once, then follows its `rayjob` messages.
   */
  async createRayJob(spec: KubeRayJobCreateRequest): Promise<KubeRayJob> {
    this._acted(RAYJOBS, spec.name, 'create');
    const job = await this.api.createRayJob(spec, this._rayjobKey.keyFor(spec));
    this._rayjobKey.succeeded();
    this._acted(RAYJOBS, job.name, 'create');
    if (this.rayjobJobs.add(job)) {
      this._emit();
    }
    return job;
  }

  /**
   * Delete job `name` of the kind whose plural is `plural`; its card goes with the kind's
   * message that says it is gone.
   */
  async removeJob(plural: string, name: string): Promise<void> {
    this._acted(plural, name, 'delete');
    await this.api.removeJob(plural, name);
  }

  /**
   * Scale an elastic cluster to `workers` (null: back to the Ray autoscaler); with `dryRun`,
   * only its fit. Rejects with `DWRequestError` (`invalid_scale`, `not_elastic`). The card
   * follows the change through the events socket, which is never older than this answer.
   */
  scale(name: string, workers: number | null, dryRun = false): Promise<ScaleResult> {
    if (!dryRun) {
      this._acted('cluster', name, 'scale');
    }
    return this.api.scale(name, workers, dryRun);
  }

  /**
   * Stop cluster `name`, keeping it (its Workload deactivated: pods removed, quota freed), or
   * resume a stopped one (queued again). Rejects with `DWRequestError` (`not_admitted`,
   * `not_stopped`, `forbidden` naming `patch workloads.kueue.x-k8s.io`). The card follows
   * the change through the events socket (an answer applied here could be older than a
   * message already shown).
   */
  async stopOrResume(name: string, action: 'stop' | 'resume'): Promise<void> {
    this._acted('cluster', name, action);
    await (action === 'stop' ? this.api.stop(name) : this.api.resume(name));
  }

  /** The Ray jobs of the ready clusters and the selected job's log (from the socket). */
  readonly jobs = new JobsState();

  /** Show the log of `job` of `cluster` (null: none), streamed on the events socket. */
  selectJob(cluster: string, job: string | null): void {
    if (this.jobs.select(cluster, job)) {
      this._sendJobsRequest();
      this._emit();
    }
  }

  /** Ask Ray (through the server, which adds the token) to stop a job. */
  stopJob(cluster: string, job: string): Promise<unknown> {
    this._acted('job', `${cluster}/${job}`, 'stop-job');
    return this.api.stopJob(cluster, job);
  }

  /** Follow the jobs of every ready cluster; `always`: ask again (a new socket). */
  private _watchJobs(always: boolean): void {
    // Not a cluster on a MultiKueue worker this workbench cannot reach (`dashboard_note`).
    const ready = [...this._clusters.values()]
      .filter(c => c.state === 'ready' && !c.dashboard_note)
      .map(c => c.name);
    if (this.jobs.setClusters(ready) || always) {
      this._sendJobsRequest();
    }
  }

  private _sendJobsRequest(): void {
    if (this._socket && this._connection === 'live') {
      try {
        this._socket.send(JSON.stringify(this.jobs.request()));
      } catch {
        // A closing socket: the next snapshot asks again.
      }
    }
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this._connection = 'stopped';
    if (this._timer !== null) {
      this.clock.clearTimeout(this._timer);
      this._timer = null;
    }
    const socket = this._socket;
    this._socket = null;
    socket?.close();
    Signal.clearData(this);
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  private _scheduleReconnect(): void {
    if (this._disposed) {
      return;
    }
    this._connection = 'reconnecting';
    const delay = backoffDelay(this._attempt, this.backoff);
    this._attempt += 1;
    this._timer = this.clock.setTimeout(() => {
      this._timer = null;
      this.connect();
    }, delay);
    this._emit();
  }

  private _emit(): void {
    if (!this._disposed) {
      this._changed.emit();
    }
  }

  private _changed = new Signal<this, void>(this);
  private _transitions = new Signal<this, Transition>(this);
  private _pending: Transition[] = [];
  private _handshake: Handshake = { kind: 'pending' };
  private _connection: Connection = 'idle';
  private _namespace: string | null = null;
  private _health: WatchHealth | null = null;
  private _username: string | null = null;
  private _clusterPolicy: ClusterPolicy | null = null;
  private _queues: Queues | null = null;
  private _queuesError: ErrorBody | null = null;
  private _clusters = new Map<string, Cluster>();
  private _holdings = new Map<string, QueueHolding>();
  private _clustersError: ErrorBody | null = null;
  private _workloads = new Map<string, Workload>();
  private _byQueue: Map<string, Workload[]> | null = null;
  private _workloadsError: ErrorBody | null = null;
  /** The workload kinds, and one holder of jobs per kind (by plural; see `jobsOf`). */
  private _kinds: WorkloadKind[] = [];
  private _byWord = new Map<string, string>();
  private _jobs = new Map<string, PodSetJobs>();
  private _positionsVisible = false;
  private _socketError: ErrorBody | null = null;
  private _socket: ISocket | null = null;
  private _timer: unknown = null;
  private _attempt = 0;
  private _everLive = false;
  private _reconnects = 0;
  private _started = false;
  private _disposed = false;
  private _lastMessageAt = 0;
  private _clusterKey = new RetryKey();
  private _rayjobKey = new RetryKey();
}

/**
 * Renders only while shown: `changed()` while hidden only marks the view stale, and `show()`
 * renders once if it is.
 */
export class RenderGate {
  constructor(private readonly render: () => void) {}

  get stale(): boolean {
    return this._stale;
  }

  changed(): void {
    if (this._visible) {
      this.render();
    } else {
      this._stale = true;
    }
  }

  show(): void {
    this._visible = true;
    if (this._stale) {
      this._stale = false;
      this.render();
    }
  }

  hide(): void {
    this._visible = false;
  }

  private _visible = false;
  private _stale = true;
}

/** The form's live fit verdict: debounced requests, stale answers dropped. */
export type FitState =
  | { kind: 'idle' }
  | { kind: 'checking' }
  | { kind: 'verdict'; fit: Fit }
  | { kind: 'invalid'; errors: Record<string, string>; message: string }
  | { kind: 'error'; message: string };

/** What a fit check judges: a Ray cluster's spec or a RayJob's (`POST rayjobs/fit`). */
export type FitRequest =
  { kind: 'cluster'; spec: ClusterSpec } | { kind: 'rayjob'; spec: KubeRayJobRequest };

export class FitChecker {
  constructor(
    private readonly api: IDWApi,
    readonly delay = 300,
    private readonly clock: IClock = browserClock
  ) {}

  get changed(): ISignal<this, FitState> {
    return this._changed;
  }

  get state(): FitState {
    return this._state;
  }

  /** Requests sent so far (the debounce keeps this low while typing). */
  get requests(): number {
    return this._requests;
  }

  /**
   * Check `spec` (a cluster's, or a RayJob's with `kind` `rayjob`) after `delay` ms unless
   * another spec comes first; an answer to an earlier one is dropped.
   */
  request(spec: ClusterSpec, kind?: 'cluster'): void;
  request(spec: KubeRayJobRequest, kind: 'rayjob'): void;
  request(spec: ClusterSpec | KubeRayJobRequest, kind: FitRequest['kind'] = 'cluster'): void {
    const fit = { kind, spec } as FitRequest;
    if (this._timer !== null) {
      this.clock.clearTimeout(this._timer);
    }
    this._set({ kind: 'checking' });
    this._timer = this.clock.setTimeout(() => {
      this._timer = null;
      void this._check(fit);
    }, this.delay);
  }

  dispose(): void {
    if (this._timer !== null) {
      this.clock.clearTimeout(this._timer);
      this._timer = null;
    }
    this._sequence += 1;
    Signal.clearData(this);
  }

  private async _check(request: FitRequest): Promise<void> {
    const sequence = ++this._sequence;
    this._requests += 1;
    try {
      const fit =
        request.kind === 'rayjob'
          ? await this.api.fitRayJob(request.spec)
          : await this.api.fit(request.spec);
      if (sequence === this._sequence) {
        this._set({ kind: 'verdict', fit });
      }
    } catch (error) {
      if (sequence !== this._sequence) {
        return;
      }
      if (error instanceof DWRequestError && error.fieldErrors) {
        const errors = error.fieldErrors;
        this._set(
          Object.keys(errors).length
            ? { kind: 'invalid', errors, message: error.message }
            : { kind: 'error', message: error.message }
        );
      } else {
        this._set({ kind: 'error', message: String((error as Error).message ?? error) });
      }
    }
  }

  private _set(state: FitState): void {
    this._state = state;
    this._changed.emit(state);
  }

  private _changed = new Signal<this, FitState>(this);
  private _state: FitState = { kind: 'idle' };
  private _timer: unknown = null;
  private _sequence = 0;
  private _requests = 0;
}

// ------------------------------------------------------------------------------------------
// Presentation helpers (pure)
// ------------------------------------------------------------------------------------------

/** `1h 02m`, `3m 05s`, `42s`. */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) {
    return `${h}h ${String(m).padStart(2, '0')}m`;
  }
  if (m > 0) {
    return `${m}m ${String(s).padStart(2, '0')}s`;
  }
  return `${s}s`;
}

export interface ITimelineStep {
  name: string;
  /** The name in words (the server's `words`; the name itself from an older server). */
  words: string;
  time: string | null;
  /** Time since the previous step with a time (ms), null when unknown. */
  sincePrevious: number | null;
}

/** The cluster's milestones with the duration of each step; empty without `milestones`. */
export function timeline(cluster: Cluster): ITimelineStep[] {
  const milestones: Milestone[] = cluster.milestones ?? [];
  let previous: number | null = null;
  return milestones.map(m => {
    const at = m.time ? Date.parse(m.time) : NaN;
    const step: ITimelineStep = {
      name: m.name,
      words: m.words ?? m.name,
      time: m.time,
      sincePrevious: !isNaN(at) && previous !== null ? at - previous : null
    };
    if (!isNaN(at)) {
      previous = at;
    }
    return step;
  });
}

/** How long the cluster has held quota (ms), from its `QuotaReserved` milestone (else its
 * `admitted_at`); null if it holds none or the time is unknown. */
export function quotaHeldFor(cluster: Cluster, now: number): number | null {
  if (!cluster.quota_reserved) {
    return null;
  }
  const reserved = (cluster.milestones ?? []).find(m => m.name === 'QuotaReserved');
  // Servers without milestones: admission follows quota reservation at once.
  const since = reserved?.time ?? cluster.admitted_at;
  const at = since ? Date.parse(since) : NaN;
  return isNaN(at) ? null : Math.max(0, now - at);
}

/** How to reach a cluster's dashboard when the server's proxy is turned off
 * (`dashboard_url` null): its head Service and port as the server read them. */
export function dashboardOffHint(cluster: Cluster): string {
  const { service, port } = cluster.dashboard;
  return (
    'The Ray dashboard proxy is turned off on this server (JupyterDW.ray_dashboard_proxy). ' +
    `Reach the dashboard another way, e.g. kubectl port-forward svc/${service} ${port}.`
  );
}

/**
 * The code cell that connects a notebook to the cluster: Ray Client through jupyter_dw, which
 * reads the cluster's Ray token in the kernel (it is never in the notebook) and checks the
 * kernel's Ray and Python versions first.
 */
export function connectionCode(cluster: Cluster): string {
  return [
    'import jupyter_dw as dw',
    '',
    `# Ray cluster ${cluster.name} (${cluster.ray_address}): ray.init with its token auth`,
    `h = dw.cluster("${cluster.name}")`,
    'h.ray_init()',
    '# Or, without Ray in this kernel: job = h.submit_job("python train.py")'
  ].join('\n');
}
