import { describe, expect, it } from 'vitest';

import type { Cluster, EventMessage, IDWApi, RayJob } from '../src/api';
import { JobsState, MAX_LOG_CHARS, jobDuration } from '../src/jobs';
import { DWModel } from '../src/model';
import { FakeClock, FakeSocket, cluster } from './fixtures';

function job(id: string, status: RayJob['status'], start: number | null = 1000): RayJob {
  return {
    submission_id: id,
    entrypoint: 'python train.py',
    status,
    message: null,
    error_type: null,
    start_time: start,
    end_time: status === 'SUCCEEDED' ? 4000 : null,
    metadata: {},
    driver_exit_code: null
  };
}

function snapshot(clusters: Cluster[]): EventMessage {
  return {
    type: 'snapshot',
    namespace: 'ns',
    queues: null,
    queues_error: null,
    clusters,
    clusters_error: null,
    workloads: [],
    workloads_error: null,
    positions_visible: true,
    health: null
  };
}

async function started() {
  const sockets: FakeSocket[] = [];
  const stopped: string[] = [];
  const api = {
    version: async () => ({ version: '0.1.0' }),
    context: async () => {
      throw new Error('no context');
    },
    stopJob: async (name: string, id: string) => {
      stopped.push(`${name}/${id}`);
      return { cluster: name, submission_id: id, stopped: true };
    },
    openEvents: () => {
      const socket = new FakeSocket();
      sockets.push(socket);
      return socket;
    }
  } as unknown as IDWApi;
  const model = new DWModel(api, '0.1.0', new FakeClock());
  await model.start();
  return { model, sockets, stopped };
}

describe('JobsState', () => {
  it('keeps the lists of followed clusters and the selected log, reset then appended', () => {
    const state = new JobsState();
    expect(state.setClusters(['b', 'a', 'a'])).toBe(true);
    expect(state.setClusters(['a', 'b'])).toBe(false);
    state.apply({ type: 'jobs', cluster: 'a', jobs: [job('j1', 'RUNNING')], error: null });
    state.apply({ type: 'jobs', cluster: 'gone', jobs: [], error: null });
    expect(state.list('a')?.jobs?.[0].submission_id).toBe('j1');
    expect(state.list('gone')).toBeUndefined();

    expect(state.select('a', 'j1')).toBe(true);
    const logs = { type: 'job_logs' as const, cluster: 'a', job: 'j1', error: null };
    state.apply({ ...logs, text: 'one\n', reset: true, end: false });
    state.apply({ ...logs, text: '42\n', reset: false, end: false });
    state.apply({ ...logs, job: 'other', text: 'not shown', reset: false, end: false });
    expect(state.log?.text).toBe('one\n42\n');
    state.apply({ ...logs, text: '', reset: false, end: true });
    expect(state.log?.end).toBe(true);
    expect(state.request()).toEqual({
      type: 'watch_jobs',
      clusters: ['a', 'b'],
      logs: { cluster: 'a', job: 'j1' }
    });

    state.apply({ ...logs, text: 'x'.repeat(MAX_LOG_CHARS + 5), reset: true, end: false });
    expect(state.log?.text.length).toBe(MAX_LOG_CHARS);
    state.setClusters(['b']);
    expect(state.selected).toBeNull();
    expect(state.list('a')).toBeUndefined();
  });

  it('measures how long a job ran', () => {
    expect(jobDuration(job('j', 'RUNNING', 1000), 6000)).toBe(5000);
    expect(jobDuration(job('j', 'SUCCEEDED', 1000), 9000)).toBe(3000);
    expect(jobDuration(job('j', 'PENDING', null), 9000)).toBeNull();
  });
});

describe('DWModel and jobs', () => {
  it('never asks for the jobs of a cluster whose head runs on an unreachable worker', async () => {
    const { model, sockets } = await started();
    const note = 'runs on worker cluster worker-1: its Ray dashboard is not reachable';
    sockets[0].deliver(
      snapshot([
        cluster('here', { state: 'ready' }),
        cluster('far', { state: 'ready', dashboard_url: null, dashboard_note: note })
      ])
    );
    expect(sockets[0].sent.map(s => JSON.parse(s))).toEqual([
      { type: 'watch_jobs', clusters: ['here'], logs: null }
    ]);
    model.dispose();
  });

  it('asks for the jobs of ready clusters on each snapshot and when one becomes ready', async () => {
    const { model, sockets, stopped } = await started();
    const socket = sockets[0];
    socket.deliver(snapshot([cluster('a', { state: 'ready' }), cluster('b', { state: 'queued' })]));
    expect(socket.sent.map(s => JSON.parse(s))).toEqual([
      { type: 'watch_jobs', clusters: ['a'], logs: null }
    ]);
    socket.deliver({
      type: 'cluster',
      event: 'MODIFIED',
      name: 'b',
      cause: { kind: 'RayCluster', name: 'b', event: 'MODIFIED' },
      state: cluster('b', { state: 'ready' }),
      milestones: ['Ready']
    });
    expect(JSON.parse(socket.sent[1])).toEqual({
      type: 'watch_jobs',
      clusters: ['a', 'b'],
      logs: null
    });
    socket.deliver({ type: 'jobs', cluster: 'b', jobs: [job('j1', 'RUNNING')], error: null });
    expect(model.jobs.list('b')?.jobs).toHaveLength(1);

    model.selectJob('b', 'j1');
    expect(JSON.parse(socket.sent[2]).logs).toEqual({ cluster: 'b', job: 'j1' });
    socket.deliver({
      type: 'job_logs',
      cluster: 'b',
      job: 'j1',
      text: '42\n',
      reset: true,
      end: false,
      error: null
    });
    expect(model.jobs.log?.text).toBe('42\n');
    await model.stopJob('b', 'j1');
    expect(stopped).toEqual(['b/j1']);
    model.dispose();
  });
});
