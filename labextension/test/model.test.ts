import { describe, expect, it, vi } from 'vitest';

import type {
  Cluster,
  ClusterPolicy,
  ClusterSpec,
  EventMessage,
  Fit,
  IDWApi,
  KubeRayJob,
  TrainJob,
  KubeRayJobCreateRequest,
  KubeRayJobRequest,
  Queues,
  Workload
} from '../src/api';
import { DWRequestError } from '../src/api';
import {
  DWModel,
  FitChecker,
  RenderGate,
  backoffDelay,
  connectionCode,
  dashboardOffHint,
  formatDuration,
  newIdempotencyKey,
  quotaHeldFor,
  timeline
} from '../src/model';
import type { Transition } from '../src/notices';
import { parseQuantity } from '../src/shared/resources.js';
import {
  FakeClock,
  FakeSocket,
  KINDS,
  LIVE,
  kindMessage,
  cluster,
  rayjob,
  trainjob,
  workload
} from './fixtures';

const QUEUES: Queues = {
  namespace: 'ns',
  kueue_api: 'v1beta2',
  quota_visible: true,
  cohorts_visible: true,
  queues: []
};

function snapshot(
  clusters: Cluster[],
  queues: Queues = QUEUES,
  rayjobs: KubeRayJob[] | null = [],
  trainjobs: TrainJob[] | null = null
): EventMessage {
  return {
    kinds: KINDS,
    rayjobs,
    rayjobs_error: null,
    trainjobs,
    trainjobs_error: null,
    type: 'snapshot',
    namespace: 'ns',
    queues,
    queues_error: null,
    clusters,
    clusters_error: null,
    workloads: [],
    workloads_error: null,
    positions_visible: true,
    health: { freshness: LIVE, caches: { rayclusters: LIVE }, kueue_controller: LIVE }
  };
}

const POLICY: ClusterPolicy = {
  default_image: 'rayproject/ray:2.60.0',
  sizes: {
    workers: { default: 1, max: null },
    worker_cpu: { default: '750m', max: '4' },
    worker_memory: { default: '3Gi', max: null },
    worker_gpu: { default: 0, max: null },
    head_cpu: { default: '1', max: null },
    head_memory: { default: '3Gi', max: null }
  }
};

function fakeApi(overrides: Partial<IDWApi> = {}) {
  const sockets: FakeSocket[] = [];
  const api: IDWApi = {
    version: async () => ({ version: '0.1.0' }),
    context: async () =>
      ({
        identity: { username: 'me', groups: [], kind: 'User', service_account: null },
        cluster_policy: POLICY
      }) as never,
    queues: async () => QUEUES,
    clusters: async () => ({ namespace: 'ns', positions_visible: true, clusters: [] }),
    fit: async () => ({}) as Fit,
    create: async (spec: ClusterSpec) => cluster(String(spec.name)),
    remove: async (name: string) => ({ name, namespace: 'ns', deleted: true as const }),
    scale: async (name: string, workers: number | null, dryRun = false) => ({
      cluster: cluster(name, { pinned_workers: workers }),
      fit: null,
      dry_run: dryRun,
      changed: !dryRun
    }),
    fitRayJob: async () => ({}) as Fit,
    createRayJob: async (spec: KubeRayJobCreateRequest) => rayjob(spec.name),
    removeJob: async (_plural: string, name: string) => ({
      name,
      namespace: 'ns',
      deleted: true as const
    }),
    stopJob: async (name: string, job: string) => ({
      cluster: name,
      submission_id: job,
      stopped: true
    }),
    openEvents: () => {
      const socket = new FakeSocket();
      sockets.push(socket);
      return socket;
    },
    ...overrides
  };
  return { api, sockets };
}

async function started(overrides: Partial<IDWApi> = {}) {
  const { api, sockets } = fakeApi(overrides);
  const clock = new FakeClock();
  const model = new DWModel(api, '0.1.0', clock);
  await model.start();
  return { model, sockets, clock };
}

describe('version handshake', () => {
  it('connects when the versions match', async () => {
    const { model, sockets } = await started();
    expect(model.handshake).toEqual({ kind: 'ok', serverVersion: '0.1.0' });
    expect(sockets).toHaveLength(1);
    expect(model.username).toBe('me');
    // The server's defaults and limits, for the form to show.
    expect(model.clusterPolicy).toEqual(POLICY);
  });

  it('reports a mismatch and opens no socket', async () => {
    const { model, sockets } = await started({ version: async () => ({ version: '0.2.0' }) });
    expect(model.handshake).toEqual({
      kind: 'mismatch',
      serverVersion: '0.2.0',
      frontendVersion: '0.1.0'
    });
    expect(sockets).toHaveLength(0);
  });

  it('reports a missing server extension on 404', async () => {
    const { model, sockets } = await started({
      version: async () => {
        throw new DWRequestError(404, null);
      }
    });
    expect(model.handshake).toEqual({ kind: 'missing' });
    expect(sockets).toHaveLength(0);
  });
});

describe('events', () => {
  it('applies a snapshot then changes, and emits each time', async () => {
    const { model, sockets } = await started();
    const seen = vi.fn();
    model.changed.connect(seen);
    expect(model.connection).toBe('connecting');
    sockets[0].deliver(snapshot([cluster('a'), cluster('b', { owner: 'other' })]));
    expect(model.connection).toBe('live');
    expect(model.clusters.map(c => c.name)).toEqual(['a', 'b']);
    expect(model.visibleClusters('mine').map(c => c.name)).toEqual(['a']);
    expect(model.visibleClusters('all').map(c => c.name)).toEqual(['a', 'b']);

    const ready = cluster('a', { state: 'ready', workers_ready: 2, quota_reserved: true });
    sockets[0].deliver({
      type: 'cluster',
      event: 'MODIFIED',
      name: 'a',
      cause: { kind: 'Pod', name: 'a-worker', event: 'MODIFIED' },
      state: ready,
      milestones: ['Ready']
    });
    expect(model.cluster('a')?.state).toBe('ready');
    sockets[0].deliver({
      type: 'cluster',
      event: 'DELETED',
      name: 'b',
      cause: { kind: 'RayCluster', name: 'b', event: 'DELETED' },
      state: null,
      milestones: []
    });
    expect(model.cluster('b')).toBeUndefined();
    const queues = { ...QUEUES, queues: [] };
    sockets[0].deliver({
      type: 'queues',
      event: 'MODIFIED',
      kind: 'ClusterQueue',
      name: 'cq',
      queues,
      queues_error: null
    });
    expect(model.queues).toEqual(queues);
    expect(seen).toHaveBeenCalledTimes(4);
  });

  it("keeps every Workload per queue in Kueue's order, live", async () => {
    const { model, sockets } = await started();
    const held = workload('held', { state: 'admitted', quota_reserved: true });
    const second = workload('second', { position_in_local_queue: 1 });
    const mine = workload('raycluster-a', {
      owner: { kind: 'RayCluster', api_group: 'ray.io', name: 'a' },
      position_in_local_queue: 0
    });
    const elsewhere = workload('other', { queue: 'gone-queue' });
    sockets[0].deliver({
      ...snapshot([cluster('a')]),
      workloads: [second, held, elsewhere, mine]
    } as EventMessage);
    expect(model.workloadsIn('team').map(w => w.name)).toEqual(['held', 'raycluster-a', 'second']);
    expect(model.workloadQueues).toEqual(['gone-queue', 'team']);
    expect(model.isMine(mine)).toBe(true);
    expect(model.isMine(second)).toBe(false);

    // The held one is gone: Kueue admits ours, the other moves up.
    sockets[0].deliver({
      type: 'workload',
      event: 'DELETED',
      name: 'held',
      queue: 'team',
      cause: { kind: 'Workload', name: 'held', event: 'DELETED' },
      workload: null
    });
    for (const changed of [
      { ...mine, state: 'admitted', quota_reserved: true, position_in_local_queue: null },
      { ...second, position_in_local_queue: 0 }
    ] as const) {
      sockets[0].deliver({
        type: 'workload',
        event: 'MODIFIED',
        name: changed.name,
        queue: 'team',
        cause: { kind: 'Workload', name: 'held', event: 'DELETED' },
        workload: changed
      });
    }
    expect(
      model.workloadsIn('team').map(w => [w.name, w.state, w.position_in_local_queue])
    ).toEqual([
      ['raycluster-a', 'admitted', null],
      ['second', 'queued', 0]
    ]);
  });

  it('regroups only the queues a Workload change touches, as grouping them all would', async () => {
    const { model, sockets } = await started();
    const names = ['a', 'b', 'c', 'd', 'e', 'f'];
    const records = new Map(
      names.map((name, i) => [
        name,
        workload(name, { queue: i % 2 ? 'team' : 'other', position_in_local_queue: i })
      ])
    );
    sockets[0].deliver({ ...snapshot([]), workloads: [...records.values()] } as EventMessage);
    const untouched = model.workloadsIn('other');
    const send = (name: string, record: Workload | null) => {
      if (record === null) {
        records.delete(name);
      } else {
        records.set(name, record);
      }
      sockets[0].deliver({
        type: 'workload',
        event: record === null ? 'DELETED' : 'MODIFIED',
        name,
        queue: record?.queue ?? null,
        cause: { kind: 'Workload', name, event: 'MODIFIED' },
        workload: record
      });
    };
    send('b', { ...records.get('b')!, position_in_local_queue: 9 }); // moves back in team
    expect(model.workloadsIn('other')).toBe(untouched); // its rows are not drawn again
    send('d', { ...records.get('d')!, queue: 'third' }); // moves to a new queue
    send('f', null); // gone
    send('g', workload('g', { queue: 'other', quota_reserved: true, state: 'admitted' }));
    send('a', { ...records.get('a')!, queue: 'team' });
    send('c', null);
    send('e', null);
    send('g', null); // 'other' is empty now
    // A second model, told the same records in one snapshot, groups them whole.
    const again = await started();
    again.sockets[0].deliver({ ...snapshot([]), workloads: [...records.values()] } as EventMessage);
    for (const queue of ['team', 'other', 'third']) {
      expect(model.workloadsIn(queue).map(w => w.name)).toEqual(
        again.model.workloadsIn(queue).map(w => w.name)
      );
    }
    expect(model.workloadQueues).toEqual(again.model.workloadQueues);
    expect(model.workloadQueues).toEqual(['team', 'third']);
    expect(model.workloadsIn('team').map(w => w.name)).toEqual(['a', 'b']);
  });

  it("replaces only a queue message's records, keeping the others' objects", async () => {
    const { model, sockets } = await started();
    const queue = (name: string, pending: number) =>
      ({ name, pending }) as unknown as Queues['queues'][number];
    const [a, b] = [queue('a', 0), queue('b', 0)];
    sockets[0].deliver(snapshot([], { ...QUEUES, queues: [a, b] }));
    const kept = model.queues?.queues[0];
    const seen = vi.fn();
    model.changed.connect(seen);
    const changed = queue('b', 3);
    sockets[0].deliver({
      type: 'queue',
      event: 'MODIFIED',
      kind: 'LocalQueue',
      name: 'b',
      queues: [changed]
    });
    expect(model.queues?.queues).toEqual([a, changed]);
    expect(model.queues?.queues[0]).toBe(kept);
    expect(model.queues?.namespace).toBe('ns');
    expect(seen).toHaveBeenCalledTimes(1);
  });

  it("moves a queue's Workloads with one positions message", async () => {
    const { model, sockets } = await started();
    const held = workload('held', { state: 'admitted', quota_reserved: true });
    const [first, second, third] = ['w-1', 'w-2', 'w-3'].map((name, i) =>
      workload(name, { position_in_local_queue: i, position_in_cluster_queue: i + 10 })
    );
    const other = workload('other', { queue: 'other', position_in_local_queue: 0 });
    sockets[0].deliver({
      ...snapshot([]),
      workloads: [first, second, third, held, other]
    } as EventMessage);
    expect(model.workloadsIn('team').map(w => w.name)).toEqual(['held', 'w-1', 'w-2', 'w-3']);
    const before = model.workloadsIn('team');

    // w-1 left (its own message); the two behind it moved up: one message for both.
    sockets[0].deliver({
      type: 'workload',
      event: 'DELETED',
      name: 'w-1',
      queue: 'team',
      cause: { kind: 'Workload', name: 'w-1', event: 'DELETED' },
      workload: null
    });
    sockets[0].deliver({
      type: 'positions',
      queue: 'team',
      cause: { kind: 'ClusterQueue', name: 'cq', event: 'MODIFIED' },
      positions: { 'w-3': [1, 11], 'w-2': [0, null] }
    });
    expect(
      model
        .workloadsIn('team')
        .map(w => [w.name, w.position_in_local_queue, w.position_in_cluster_queue])
    ).toEqual([
      ['held', null, null],
      ['w-2', 0, null],
      ['w-3', 1, 11]
    ]);
    expect(model.workloadsIn('team')).not.toBe(before);
    const otherNow = model.workloadsIn('other');

    // Grouped already: a later message sorts its own queue again, the others are kept.
    sockets[0].deliver({
      type: 'positions',
      queue: 'team',
      cause: { kind: 'LocalQueue', name: 'team', event: 'MODIFIED' },
      positions: { 'w-3': [0, 10], 'w-2': [1, 11], unknown: [2, 12] }
    });
    expect(model.workloadsIn('team').map(w => w.name)).toEqual(['held', 'w-3', 'w-2']);
    expect(model.workloadsIn('other')).toBe(otherNow);
  });

  it('follows the watch health: reconnecting, then live again', async () => {
    const { model, sockets } = await started();
    sockets[0].deliver(snapshot([cluster('a')]));
    expect(model.health?.freshness.state).toBe('live');
    const away = {
      state: 'reconnecting',
      reason: 'Cannot reach the Kubernetes API server',
      since: '2026-11-23T20:00:00.000Z'
    } as const;
    sockets[0].deliver({
      type: 'health',
      freshness: away,
      caches: { rayclusters: away },
      kueue_controller: LIVE
    });
    expect(model.health?.freshness).toEqual(away);
    sockets[0].deliver({
      type: 'cluster',
      event: 'MODIFIED',
      name: 'a',
      cause: { kind: 'WatchHealth', name: 'reconnecting', event: 'MODIFIED' },
      state: cluster('a', { freshness: away }),
      milestones: []
    });
    expect(model.cluster('a')?.freshness.state).toBe('reconnecting');
    sockets[0].deliver({
      type: 'health',
      freshness: LIVE,
      caches: { rayclusters: LIVE },
      kueue_controller: LIVE
    });
    expect(model.health?.freshness.state).toBe('live');
  });

  it('reconnects with backoff after a drop and replaces state with a fresh snapshot', async () => {
    const { model, sockets, clock } = await started();
    sockets[0].deliver(snapshot([cluster('old')]));
    sockets[0].drop();
    expect(model.connection).toBe('reconnecting');
    expect(clock.pendingDelays()).toEqual([backoffDelay(0)]);
    clock.advance(backoffDelay(0));
    expect(sockets).toHaveLength(2);
    // The second attempt fails too: the next delay doubles.
    sockets[1].drop();
    expect(clock.pendingDelays()).toEqual([backoffDelay(1)]);
    expect(backoffDelay(1)).toBe(2 * backoffDelay(0));
    clock.advance(backoffDelay(1));
    expect(sockets).toHaveLength(3);
    expect(model.connection).toBe('reconnecting');
    sockets[2].deliver(snapshot([cluster('new')]));
    expect(model.connection).toBe('live');
    expect(model.reconnects).toBe(1);
    expect(model.clusters.map(c => c.name)).toEqual(['new']);
    // After a snapshot the backoff starts over.
    sockets[2].drop();
    expect(clock.pendingDelays()).toEqual([backoffDelay(0)]);
  });

  it('ignores messages of a replaced socket and stops on dispose', async () => {
    const { model, sockets, clock } = await started();
    sockets[0].deliver(snapshot([]));
    sockets[0].drop();
    clock.advance(backoffDelay(0));
    sockets[0].deliver(snapshot([cluster('stale')]));
    expect(model.clusters).toEqual([]);
    model.dispose();
    expect(sockets[1].closed).toBe(true);
    expect(model.connection).toBe('stopped');
    sockets[1].drop();
    expect(clock.pendingDelays()).toEqual([]);
  });

  it('caps the backoff', () => {
    expect(backoffDelay(20)).toBe(10000);
  });
});

describe('RenderGate', () => {
  it('does not render while hidden and renders once when shown', () => {
    const render = vi.fn();
    const gate = new RenderGate(render);
    gate.changed();
    gate.changed();
    expect(render).not.toHaveBeenCalled();
    gate.show();
    expect(render).toHaveBeenCalledTimes(1);
    gate.changed();
    expect(render).toHaveBeenCalledTimes(2);
    gate.hide();
    gate.changed();
    expect(render).toHaveBeenCalledTimes(2);
    gate.show();
    expect(render).toHaveBeenCalledTimes(3);
    gate.hide();
    gate.show();
    expect(render).toHaveBeenCalledTimes(3); // nothing changed meanwhile
  });
});

describe('FitChecker', () => {
  it('debounces and keeps only the latest answer', async () => {
    const clock = new FakeClock();
    const answers: ((fit: Fit) => void)[] = [];
    const fit = vi.fn(
      (spec: ClusterSpec) =>
        new Promise<Fit>(resolve => answers.push(f => resolve({ ...f, spec } as never)))
    );
    const { api } = fakeApi({ fit });
    const checker = new FitChecker(api, 300, clock);
    checker.request({ workers: 1 });
    clock.advance(100);
    checker.request({ workers: 2 });
    clock.advance(299);
    expect(fit).not.toHaveBeenCalled();
    expect(checker.state.kind).toBe('checking');
    clock.advance(1);
    expect(fit).toHaveBeenCalledTimes(1);
    expect(fit).toHaveBeenLastCalledWith({ workers: 2 });
    checker.request({ workers: 3 });
    clock.advance(300);
    expect(fit).toHaveBeenCalledTimes(2);
    // The older answer arrives last: it is dropped.
    answers[1]({ verdict: 'fits-now' } as Fit);
    await Promise.resolve();
    answers[0]({ verdict: 'must-wait' } as Fit);
    await new Promise(resolve => setTimeout(resolve, 0));
    expect(checker.state).toMatchObject({ kind: 'verdict', fit: { verdict: 'fits-now' } });
  });

  it('turns a 400 into per-field errors', async () => {
    const clock = new FakeClock();
    const body = {
      error: 'Invalid cluster spec',
      reason: null,
      hint: null,
      code: 'invalid_spec',
      errors: { workers: 'must be at least 1' }
    };
    const { api } = fakeApi({
      fit: async () => {
        throw new DWRequestError(400, body);
      }
    });
    const checker = new FitChecker(api, 300, clock);
    checker.request({ workers: 0 });
    clock.advance(300);
    await new Promise(resolve => setTimeout(resolve, 0));
    expect(checker.state).toEqual({
      kind: 'invalid',
      errors: { workers: 'must be at least 1' },
      message: 'Invalid cluster spec'
    });
  });
});

describe('presentation', () => {
  it('computes step durations and quota held from milestones', () => {
    const c = cluster('a', {
      quota_reserved: true,
      milestones: [
        { name: 'Submitted', time: '2026-01-01T00:00:00Z' },
        { name: 'QuotaReserved', time: '2026-01-01T00:00:02Z' },
        { name: 'HeadReady', time: null },
        { name: 'Ready', time: '2026-01-01T00:01:07Z' }
      ]
    });
    expect(timeline(c).map(s => s.sincePrevious)).toEqual([null, 2000, null, 65000]);
    expect(quotaHeldFor(c, Date.parse('2026-01-01T00:02:02Z'))).toBe(120000);
    expect(quotaHeldFor({ ...c, quota_reserved: false }, Date.now())).toBeNull();
    expect(timeline(cluster('no-milestones'))).toEqual([]);
  });

  it('formats durations and quantities', () => {
    expect(formatDuration(42_000)).toBe('42s');
    expect(formatDuration(65_000)).toBe('1m 05s');
    expect(formatDuration(3_720_000)).toBe('1h 02m');
    expect(parseQuantity('500m')).toBe(0.5);
    expect(parseQuantity('16Gi')).toBe(16 * 2 ** 30);
    expect(parseQuantity('4')).toBe(4);
    expect(parseQuantity(null)).toBeNaN();
  });

  it('writes the connection code for the head service', () => {
    const code = connectionCode(cluster('a'));
    expect(code).toContain('h = dw.cluster("a")\nh.ray_init()');
    expect(code).toContain('ray://a-head-svc.ns.svc:10001');
    expect(code.toLowerCase()).not.toContain('token=');
  });

  it('says how to reach a dashboard when the proxy is off', () => {
    const off = cluster('a', { dashboard_url: null, dashboard: { service: 'a-head', port: 9000 } });
    expect(dashboardOffHint(off)).toContain('kubectl port-forward svc/a-head 9000');
    expect(dashboardOffHint(cluster('b'))).toContain('svc/b-head-svc 8265');
  });
});

describe('idempotency keys on create', () => {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

  it('sends a fresh key per click and the same key when a failed click is retried', async () => {
    const keys: (string | undefined)[] = [];
    let fail = true;
    const { model } = await started({
      create: async (spec: ClusterSpec, key?: string) => {
        keys.push(key);
        if (fail) {
          throw new DWRequestError(503, {
            error: 'Cannot reach the Kubernetes API server',
            reason: 'connection cut',
            hint: 'Retrying with the same idempotency key is safe',
            code: 'unreachable'
          });
        }
        return cluster(String(spec.name));
      }
    });
    const spec = { name: 'a', workers: 1 } as ClusterSpec;

    await expect(model.create(spec)).rejects.toBeInstanceOf(DWRequestError);
    fail = false;
    await model.create(spec); // the retry of the same form
    await model.create({ ...spec, name: 'b' }); // another cluster: a new action
    await model.create({ ...spec, name: 'b' }); // succeeded before: a new action again

    expect(keys[0]).toMatch(UUID);
    expect(keys[1]).toBe(keys[0]);
    expect(new Set(keys).size).toBe(3);
  });

  it('starts over with a new key when the spec changed after a failure', async () => {
    const keys: (string | undefined)[] = [];
    const { model } = await started({
      create: async (_spec: ClusterSpec, key?: string) => {
        keys.push(key);
        throw new DWRequestError(504, { error: 'timeout', reason: null, hint: null });
      }
    });
    await expect(model.create({ name: 'a', workers: 1 })).rejects.toThrow();
    await expect(model.create({ name: 'a', workers: 2 })).rejects.toThrow();
    expect(keys[1]).not.toBe(keys[0]);
  });

  it('makes version 4 UUIDs', () => {
    expect(newIdempotencyKey()).toMatch(UUID);
    expect(newIdempotencyKey()).not.toBe(newIdempotencyKey());
  });
});

describe('RayJobs', () => {
  it("lists the snapshot's RayJobs, then follows rayjob messages to the end", async () => {
    const { model, sockets } = await started();
    sockets[0].deliver(snapshot([], QUEUES, [rayjob('b'), rayjob('a')]));
    expect(model.rayjobsServed).toBe(true);
    expect(model.rayjobs.map(j => j.name)).toEqual(['a', 'b']);
    const failed = rayjob('a', {
      state: 'failed',
      final: true,
      reason: 'JobDeploymentStatusTransitionGracePeriodExceeded',
      message: 'the Ray head did not answer',
      cluster: 'a-x7k2p',
      position_in_local_queue: null
    });
    sockets[0].deliver(kindMessage('rayjob', 'RayJob', 'a', 'MODIFIED', failed));
    expect(model.rayjob('a')).toEqual(failed);
    sockets[0].deliver(kindMessage('rayjob', 'RayJob', 'b', 'DELETED', null));
    expect(model.rayjobs.map(j => j.name)).toEqual(['a']);
  });

  it("lists the snapshot's TrainJobs, follows trainjob messages, and filters by who made them", async () => {
    const removed: string[] = [];
    const { model, sockets } = await started({
      removeJob: async (plural: string, name: string) => {
        expect(plural).toBe('trainjobs');
        removed.push(name);
        return { name, namespace: 'ns', deleted: true as const };
      }
    });
    const theirs = trainjob('theirs', { owner: 'someone-else', position_in_local_queue: 1 });
    sockets[0].deliver(snapshot([], QUEUES, [rayjob('r')], [trainjob('tj'), theirs]));
    expect(model.jobsOf('trainjobs').served).toBe(true);
    expect(model.jobsOf('trainjobs').all.map(j => j.name)).toEqual(['theirs', 'tj']);
    // "mine" is the owner the server recorded, as for clusters; RayJobs alike.
    expect(model.visibleJobs(model.jobsOf('trainjobs'), 'mine').map(j => j.name)).toEqual(['tj']);
    expect(model.visibleJobs(model.jobsOf('trainjobs'), 'all')).toHaveLength(2);
    expect(model.visibleJobs(model.rayjobJobs, 'mine').map(j => j.name)).toEqual(['r']);
    const running = trainjob('tj', {
      state: 'running',
      reason: null,
      message: null,
      jobs_ready: 1,
      position_in_local_queue: null
    });
    sockets[0].deliver(
      kindMessage('trainjob', 'Workload', 'tj', 'MODIFIED', running, {
        kind: 'Workload',
        name: 'trainjob-tj-abcde'
      })
    );
    expect(model.jobsOf('trainjobs').get('tj')).toEqual(running);
    // The Workloads of my TrainJob and RayJob are mine; another's TrainJob's is not.
    const owned = (kind: string, api_group: string, name: string) =>
      workload(`w-${name}`, { owner: { kind, api_group, name } });
    expect(model.isMine(owned('TrainJob', 'trainer.kubeflow.org', 'tj'))).toBe(true);
    expect(model.isMine(owned('TrainJob', 'trainer.kubeflow.org', 'theirs'))).toBe(false);
    expect(model.isMine(owned('RayJob', 'ray.io', 'r'))).toBe(true);
    expect(model.isMine(owned('Job', 'batch', 'tj'))).toBe(false);
    await model.removeJob('trainjobs', 'tj');
    expect(removed).toEqual(['tj']);
    sockets[0].deliver(kindMessage('trainjob', 'TrainJob', 'tj', 'DELETED', null));
    expect(model.jobsOf('trainjobs').all.map(j => j.name)).toEqual(['theirs']);
  });

  it('knows when the server does not serve TrainJobs (no Kubeflow Trainer)', async () => {
    const { model, sockets } = await started();
    sockets[0].deliver(snapshot([], QUEUES, [], null));
    expect(model.jobsOf('trainjobs').served).toBe(false);
    expect(model.jobsOf('trainjobs').all).toEqual([]);
    expect(model.rayjobsServed).toBe(true);
  });

  it('knows when the server does not serve RayJobs', async () => {
    const { model, sockets } = await started();
    sockets[0].deliver(snapshot([], QUEUES, null));
    expect(model.rayjobsServed).toBe(false);
    expect(model.rayjobs).toEqual([]);
  });

  it("serves a kind it has no code for from the snapshot's kinds alone", async () => {
    const removed: string[] = [];
    const { model, sockets } = await started({
      removeJob: async (plural: string, name: string) => {
        removed.push(`${plural}/${name}`);
        return { name, namespace: 'ns', deleted: true as const };
      }
    });
    const pytorchjobs = {
      plural: 'pytorchjobs',
      word: 'pytorchjob',
      kind: 'PyTorchJob',
      group: 'kubeflow.org'
    };
    const job = { ...trainjob('pt'), runtime: undefined, num_nodes: undefined };
    sockets[0].deliver({
      ...snapshot([], QUEUES, [rayjob('r')]),
      kinds: [...KINDS, pytorchjobs],
      pytorchjobs: [job],
      pytorchjobs_error: null
    } as EventMessage);
    expect(model.kinds.map(k => k.plural)).toEqual(['rayjobs', 'trainjobs', 'pytorchjobs']);
    const jobs = model.jobsOf('pytorchjobs');
    expect(jobs.served).toBe(true);
    expect(jobs.all.map(j => j.name)).toEqual(['pt']);
    expect(
      model.isMine(
        workload('w-pt', { owner: { kind: 'PyTorchJob', api_group: 'kubeflow.org', name: 'pt' } })
      )
    ).toBe(true);
    const running = { ...job, state: 'running' };
    sockets[0].deliver(kindMessage('pytorchjob', 'PyTorchJob', 'pt', 'MODIFIED', running));
    expect(jobs.get('pt')?.state).toBe('running');
    await model.removeJob('pytorchjobs', 'pt');
    expect(removed).toEqual(['pytorchjobs/pt']);
    sockets[0].deliver(kindMessage('pytorchjob', 'PyTorchJob', 'pt', 'DELETED', null));
    expect(jobs.all).toEqual([]);
    // A later snapshot without the kind: not served any more (no section).
    sockets[0].deliver(snapshot([], QUEUES, [rayjob('r')]));
    expect(model.jobsOf('pytorchjobs').served).toBe(false);
    expect(model.rayjobsServed).toBe(true);
  });

  it('shows a submitted RayJob at once and retries with the same key', async () => {
    const keys: (string | undefined)[] = [];
    let fail = true;
    const { model, sockets } = await started({
      createRayJob: async (spec: KubeRayJobCreateRequest, key?: string) => {
        keys.push(key);
        if (fail) {
          throw new DWRequestError(504, { error: 'timeout', reason: null, hint: null });
        }
        return rayjob(spec.name);
      }
    });
    sockets[0].deliver(snapshot([]));
    const spec: KubeRayJobCreateRequest = { name: 'train', entrypoint: 'python t.py' };
    await expect(model.createRayJob(spec)).rejects.toBeInstanceOf(DWRequestError);
    fail = false;
    await model.createRayJob(spec);
    expect(keys[1]).toBe(keys[0]);
    expect(model.rayjob('train')?.state).toBe('queued');
    // A cluster's create keeps its own key: another kind, another action.
    const clusterKeys: (string | undefined)[] = [];
    const other = await started({
      create: async (s: ClusterSpec, key?: string) => {
        clusterKeys.push(key);
        return cluster(String(s.name));
      }
    });
    await other.model.create({ name: 'train' });
    expect(clusterKeys[0]).not.toBe(keys[0]);
  });

  it("checks a RayJob's fit through rayjobs/fit", async () => {
    const clock = new FakeClock();
    const fit = vi.fn(async () => ({ verdict: 'must-wait' }) as Fit);
    const fitRayJob = vi.fn(
      async (spec: KubeRayJobRequest) => ({ verdict: 'fits-now', spec }) as never
    );
    const { api } = fakeApi({ fit, fitRayJob });
    const checker = new FitChecker(api, 300, clock);
    checker.request({ cluster: { workers: 2 } }, 'rayjob');
    clock.advance(300);
    await new Promise(resolve => setTimeout(resolve, 0));
    expect(fit).not.toHaveBeenCalled();
    expect(fitRayJob).toHaveBeenCalledWith({ cluster: { workers: 2 } });
    expect(checker.state).toMatchObject({ kind: 'verdict', fit: { verdict: 'fits-now' } });
  });
});

describe('transitions (what notices are decided from)', () => {
  it("emits each record before and after a message, and a reconnect snapshot's changes", async () => {
    const { model, sockets, clock } = await started();
    const seen: Transition[] = [];
    model.transitions.connect((_, t) => seen.push(t));
    sockets[0].deliver(snapshot([cluster('a')], QUEUES, [rayjob('j')]));
    expect(seen).toEqual([]); // the first snapshot: nothing before it
    const ready = cluster('a', { state: 'ready', milestones: [{ name: 'Ready', time: null }] });
    sockets[0].deliver({
      type: 'cluster',
      event: 'MODIFIED',
      name: 'a',
      cause: { kind: 'Pod', name: 'a-worker', event: 'MODIFIED' },
      state: ready,
      milestones: ['HeadReady']
    });
    expect(seen[0]).toMatchObject({ subject: 'cluster', name: 'a', after: ready });
    expect(seen[0].subject === 'cluster' && seen[0].crossed).toEqual(['HeadReady', 'Ready']);
    expect(seen[0].subject === 'cluster' && seen[0].before?.state).toBe('queued');
    const running = rayjob('j', { state: 'running' });
    sockets[0].deliver(kindMessage('rayjob', 'RayJob', 'j', 'MODIFIED', running));
    expect(seen[1]).toMatchObject({ subject: 'kind', plural: 'rayjobs', kind: 'RayJob' });
    // The socket drops; the next snapshot says what changed meanwhile.
    sockets[0].drop();
    clock.advance(500);
    sockets[1].deliver(
      snapshot([cluster('a', { state: 'preempted' })], QUEUES, [
        rayjob('j', { state: 'succeeded' })
      ])
    );
    expect(seen.slice(2).map(t => (t.subject === 'job' ? t.cluster : t.name))).toEqual(['a', 'j']);
  });

  it("remembers the user's own actions in this tab", async () => {
    const { model } = await started({ stop: async () => cluster('a', { state: 'stopped' }) });
    await model.stopOrResume('a', 'stop');
    await model.scale('a', 4, true); // a dry run is no action
    const notice = (kind: 'preempted' | 'scaled') =>
      ({ kind, subject: 'cluster', name: 'a' }) as Parameters<typeof model.recent.quiets>[0];
    expect(model.recent.quiets(notice('preempted'), model.clock.now())).toBe(true);
    expect(model.recent.quiets(notice('scaled'), model.clock.now())).toBe(false);
  });
});
