import { describe, expect, it } from 'vitest';

import type { Cluster, RayJob } from '../src/api';
import {
  MAX_TEXT,
  NOTICE_KINDS,
  RECENT_MS,
  RecentActions,
  Transition,
  crossedMilestones,
  enabledKinds,
  noticesOf
} from '../src/notices';
import { cluster, rayjob, trainjob } from './fixtures';

const NOW = Date.parse('2026-11-27T10:10:00Z');

const waitedSpan = (seconds: number | null) => ({
  spans: [
    {
      step: 'queue',
      words: 'waiting in the queue',
      start: '2026-11-27T10:00:00Z',
      end: null,
      seconds,
      done: seconds !== null,
      current: seconds === null,
      detail: null
    }
  ],
  ending: null
});

function change(before: Cluster | undefined, after: Cluster | null, crossed: string[] = []) {
  const t: Transition = { subject: 'cluster', name: 'c', before, after, crossed };
  return noticesOf(t, NOW);
}

const queued = cluster('c', {
  summary: 'needs 2 CPU more in flavor default',
  message:
    "couldn't assign flavors to pod set head: insufficient unused quota for cpu in flavor default, 2 more needed",
  timeline: waitedSpan(null)
});
const admitted = cluster('c', {
  state: 'admitted',
  reason: null,
  admitted: true,
  quota_reserved: true,
  admitted_at: '2026-11-27T10:06:40Z',
  position_in_local_queue: null,
  timeline: waitedSpan(400)
});
const ready = { ...admitted, state: 'ready' as const, head_ready: true, workers_ready: 2 };

describe('cluster notices', () => {
  it('tells an admission after a wait, with how long it waited', () => {
    const [notice, ...rest] = change(queued, admitted);
    expect(rest).toEqual([]);
    expect(notice).toMatchObject({
      kind: 'admitted',
      level: 'success',
      text: 'Ray cluster c was admitted after waiting 6m 40s',
      key: 'cluster/c/admitted/2026-11-27T10:06:40Z'
    });
  });

  it('does not tell an admission that did not wait', () => {
    const fitting = cluster('c', { summary: null, position_in_local_queue: null });
    expect(change(fitting, { ...admitted, timeline: waitedSpan(1) })).toEqual([]);
    // Queued again after a stop or a preemption: the queue span is the first admission's.
    const requeued = cluster('c', { summary: null, timeline: waitedSpan(400) });
    expect(change(requeued, admitted)).toEqual([]);
    const [told] = change({ ...requeued, summary: 'needs 2 CPU more' }, admitted);
    expect(told.text).toBe('Ray cluster c was admitted');
  });

  it('tells ready once, with the dashboard as its action; ready covers admitted', () => {
    const notices = change(queued, ready, ['QuotaReserved', 'Admitted', 'Ready']);
    expect(notices.map(n => n.kind)).toEqual(['ready']);
    expect(notices[0].text).toBe('Ray cluster c is ready');
    expect(notices[0].actions).toEqual(['dashboard', 'show']);
    expect(change(ready, { ...ready, workers_ready: 3 })).toEqual([]); // still ready
  });

  it("tells a preemption with Kueue's words, not the stop the user asked for", () => {
    const preempted = {
      ...ready,
      state: 'preempted' as const,
      reason: 'Preempted',
      message: 'Preempted to accommodate a workload (UID: 1) due to prioritization',
      summary: null
    };
    const [notice] = change(ready, preempted, ['Preempted']);
    expect(notice.kind).toBe('preempted');
    expect(notice.level).toBe('warning');
    expect(notice.text).toBe(
      'Ray cluster c was preempted: Preempted to accommodate a workload (UID: 1) due to prioritization'
    );
    // Requeued at once: the milestone crossed still tells it.
    expect(change(ready, { ...queued, state: 'queued' }, ['Evicted'])[0].text).toMatch(
      /^Ray cluster c was evicted: needs 2 CPU/
    );
    const stopped = { ...ready, state: 'stopped' as const, stopped: null };
    expect(change(ready, stopped, ['Evicted']).map(n => n.kind)).toEqual(['stopped']);
  });

  it('tells a stop by the idle rule with Resume', () => {
    const stopped = {
      ...ready,
      state: 'stopped' as const,
      stopped: { by: 'system:sa', at: '2026-11-27T10:09:00Z', reason: { by: 'idle rule' } }
    } as Cluster;
    const [notice] = change(ready, stopped);
    expect(notice.text).toBe('Ray cluster c was stopped by the idle rule; it holds no quota now');
    expect(notice.actions).toEqual(['resume', 'show']);
  });

  it('tells a failure, cut to what JupyterLab shows', () => {
    const failed = { ...admitted, state: 'failed' as const, message: 'x'.repeat(300) };
    const [notice] = change(admitted, failed);
    expect(notice).toMatchObject({ kind: 'failed', level: 'error' });
    expect(notice.text.length).toBe(MAX_TEXT);
    expect(notice.text.endsWith('…')).toBe(true);
  });

  it('tells a resize admitted, from the milestones crossed', () => {
    const resized = {
      ...ready,
      milestones: [{ name: 'ScaleAdmitted:6', time: '2026-11-27T10:09:30Z' }]
    };
    const crossed = crossedMilestones(ready, resized);
    expect(crossed).toEqual(['ScaleAdmitted:6']);
    const [notice] = change(ready, resized, crossed);
    expect(notice).toMatchObject({
      kind: 'scaled',
      text: 'Ray cluster c: the resize to 6 workers was admitted',
      key: 'cluster/c/ScaleAdmitted:6/2026-11-27T10:09:30Z'
    });
  });

  it("tells the idle rule's warning once, also for a cluster first seen warned", () => {
    const warned = {
      ...ready,
      usage: {
        idle_action: { action: 'stop', at: '2026-11-27T11:00:00Z', warning: true }
      }
    } as unknown as Cluster;
    expect(change(ready, warned).map(n => n.kind)).toEqual(['idle']);
    expect(change(undefined, warned).map(n => n.kind)).toEqual(['idle']);
    expect(change(warned, warned)).toEqual([]);
  });

  it('tells nothing of a cluster first seen or gone', () => {
    expect(change(undefined, ready)).toEqual([]);
    expect(change(ready, null)).toEqual([]);
  });
});

describe('job notices', () => {
  const kind = (before: object, after: object | null) =>
    noticesOf(
      {
        subject: 'kind',
        plural: 'rayjobs',
        kind: 'RayJob',
        name: 'j',
        before: rayjob('j', before),
        after: after && rayjob('j', after)
      },
      NOW
    );

  it('tells a RayJob admitted after waiting, finished, failed or preempted', () => {
    expect(kind({}, { state: 'running' })[0].text).toBe('RayJob j was admitted');
    expect(kind({ state: 'running' }, { state: 'succeeded' })[0]).toMatchObject({
      kind: 'finished',
      text: 'RayJob j succeeded'
    });
    const failed = kind(
      { state: 'running' },
      { state: 'failed', reason: 'DeadlineExceeded', message: 'too long', summary: null }
    );
    expect(failed[0]).toMatchObject({ kind: 'failed', text: 'RayJob j failed: too long' });
    expect(kind({ state: 'running' }, { state: 'preempted' })[0].kind).toBe('preempted');
    expect(kind({ state: 'running' }, { state: 'running' })).toEqual([]);
  });

  it('tells a TrainJob alike', () => {
    const notices = noticesOf(
      {
        subject: 'kind',
        plural: 'trainjobs',
        kind: 'TrainJob',
        name: 't',
        before: trainjob('t', { state: 'running' }),
        after: trainjob('t', { state: 'succeeded' })
      },
      NOW
    );
    expect(notices[0]).toMatchObject({
      text: 'TrainJob t succeeded',
      key: 'trainjobs/t/succeeded'
    });
  });

  it('tells a Ray job on a cluster that ended now, with its log as the action', () => {
    const job = (status: RayJob['status'], message: string | null = null) =>
      ({ submission_id: 'raysubmit_1', status, message }) as RayJob;
    const jobs = (before: RayJob[] | undefined, after: RayJob[]) =>
      noticesOf({ subject: 'job', cluster: 'c', before, after }, NOW);
    expect(jobs([job('RUNNING')], [job('SUCCEEDED')])[0]).toMatchObject({
      kind: 'finished',
      job: 'raysubmit_1',
      text: 'Ray job raysubmit_1 on c succeeded',
      actions: ['log']
    });
    expect(jobs([job('RUNNING')], [job('FAILED', 'exit 1')])[0].text).toBe(
      'Ray job raysubmit_1 on c failed: exit 1'
    );
    expect(jobs(undefined, [job('FAILED')])).toEqual([]); // its end was known before
    expect(jobs([job('RUNNING')], [job('STOPPED')])).toEqual([]);
  });
});

describe('RecentActions', () => {
  const notice = (kind: 'admitted' | 'ready' | 'preempted' | 'scaled', name = 'c') =>
    ({ kind, subject: 'cluster', name }) as Parameters<RecentActions['quiets']>[0];

  it("quiets what follows from the user's own action, for a while", () => {
    const recent = new RecentActions();
    recent.note('cluster', 'c', 'stop', 0);
    expect(recent.quiets(notice('preempted'), 1000)).toBe(true);
    expect(recent.quiets(notice('ready'), 1000)).toBe(false);
    expect(recent.quiets(notice('preempted', 'other'), 1000)).toBe(false);
    expect(recent.quiets(notice('preempted'), RECENT_MS + 1)).toBe(false);
    recent.note('cluster', 'c', 'scale', 0);
    expect(recent.quiets(notice('scaled'), 10)).toBe(true);
    recent.note('cluster', 'c', 'delete', 0);
    expect(recent.quiets(notice('ready'), 10)).toBe(true);
  });
});

describe('enabledKinds', () => {
  it('reads the setting, each absent kind at its default', () => {
    expect(enabledKinds(undefined)).toEqual(NOTICE_KINDS);
    expect(enabledKinds({ ready: false, stopped: true, junk: 1 })).toEqual({
      ...NOTICE_KINDS,
      ready: false,
      stopped: true
    });
  });
});
