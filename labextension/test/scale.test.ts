import { describe, expect, it, vi } from 'vitest';

import type { Cluster, ScaleChange, ScaleResult } from '../src/api';
import { DWRequestError } from '../src/api';
import { DWModel } from '../src/model';
import { ScaleStepper, scaleErrorText } from '../src/scale';
import {
  appliedText,
  barWidths,
  canScale,
  positionText,
  proposalText,
  stepperStart,
  workersBar
} from '../src/shared/workers_bar.js';
import { FakeClock, cluster } from './fixtures';

/** An elastic cluster running `ready` of `admitted` workers, range 1–8. */
function elastic(extra: Partial<Cluster> = {}): Cluster {
  return cluster('el', {
    state: 'ready',
    quota_reserved: true,
    admitted: true,
    head_ready: true,
    elastic: true,
    min_workers: 1,
    max_workers: 8,
    workers_ready: 4,
    workers_admitted: 4,
    workers_desired: 4,
    position_in_local_queue: null,
    position_in_cluster_queue: null,
    ...extra
  });
}

function change(extra: Partial<ScaleChange>): ScaleChange {
  return {
    state: 'queued',
    from: 4,
    to: 6,
    requested_by: 'autoscaler',
    reason: 'Pending',
    message: "couldn't assign flavors to pod set workers: insufficient unused quota for cpu",
    position_in_local_queue: 0,
    position_in_cluster_queue: 2,
    since: '2026-11-24T00:00:00Z',
    workload: 'raycluster-el-2',
    ...extra
  };
}

const PENDING = elastic({ workers_desired: 6, scale: change({}) });

describe('the workers bar', () => {
  it('draws a pending scale-up as ready, then waiting for quota, with who asked and where', () => {
    const bar = workersBar(PENDING);
    expect(bar.segments).toEqual({ ready: 4, starting: 0, waiting: 2, removing: 0 });
    expect(bar.total).toBe(6);
    expect(bar.summary).toBe('4 ready of 4 admitted · 2 more waiting for quota');
    expect(bar.request).toBe('the Ray autoscaler asked for 6 workers: waiting for quota');
    expect(bar.pending).toBe(
      "Pending: couldn't assign flavors to pod set workers: insufficient unused quota for cpu"
    );
    expect(bar.position).toBe('position 1 in the queue (3 in cq)');
    expect(bar.owner).toBe('the Ray autoscaler sizes it within 1–8');
    const widths = barWidths(bar);
    expect(widths.ready).toBeCloseTo((4 / 6) * 100);
    expect(widths.waiting).toBeCloseTo((2 / 6) * 100);
  });

  it('says "you pinned" for the viewer’s own scale, "pinned at" for someone else’s', () => {
    const pinned = elastic({
      workers_desired: 6,
      pinned_workers: 6,
      scale: change({ requested_by: 'user' })
    });
    expect(workersBar(pinned, true).request).toBe('you pinned 6 workers: waiting for quota');
    expect(workersBar(pinned, true).owner).toBe('you pinned it at 6 workers (range 1–8)');
    expect(workersBar(pinned, false).request).toBe('pinned at 6 workers: waiting for quota');
    expect(workersBar(pinned, false).owner).toBe('pinned at 6 workers (range 1–8)');
  });

  it('shows an admitted scale-up as starting workers', () => {
    const bar = workersBar(
      elastic({
        workers_admitted: 6,
        workers_desired: 6,
        scale: change({ state: 'admitted', position_in_local_queue: null })
      })
    );
    expect(bar.segments).toEqual({ ready: 4, starting: 2, waiting: 0, removing: 0 });
    expect(bar.summary).toBe('4 ready of 6 admitted');
    expect(bar.request).toBe('the Ray autoscaler asked for 6 workers: admitted, 2 starting');
    expect(bar.pending).toBeNull();
    expect(bar.position).toBeNull();
  });

  it('shows a scale-down as such: quota already freed, pods being removed', () => {
    const bar = workersBar(
      elastic({
        workers_ready: 6,
        workers_admitted: 2,
        workers_desired: 2,
        pinned_workers: 2,
        scale: change({
          state: 'scaling-down',
          from: 6,
          to: 2,
          requested_by: 'user',
          reason: null,
          message: null,
          position_in_local_queue: null,
          position_in_cluster_queue: null
        })
      }),
      true
    );
    expect(bar.segments).toEqual({ ready: 2, starting: 0, waiting: 0, removing: 4 });
    expect(bar.summary).toBe('6 ready · scaling down to 2: 4 being removed');
    expect(bar.request).toBe('you pinned 2 workers: scaling down from 6');
    expect(bar.pending).toBeNull();
  });

  it('before the first admission, counts what is requested and nothing as waiting', () => {
    const bar = workersBar(
      elastic({ state: 'queued', workers_ready: 0, workers_admitted: null, workers_desired: 2 })
    );
    expect(bar.segments).toEqual({ ready: 0, starting: 2, waiting: 0, removing: 0 });
    expect(bar.summary).toBe('0 ready of 2 requested');
  });

  it('a steady elastic cluster: one full ready segment', () => {
    const bar = workersBar(elastic());
    expect(bar.segments).toEqual({ ready: 4, starting: 0, waiting: 0, removing: 0 });
    expect(bar.summary).toBe('4 ready of 4 admitted');
    expect(bar.request).toBeNull();
    expect(barWidths(bar).ready).toBe(100);
  });

  it('positions are 1-based and optional', () => {
    expect(positionText(0, null, 'cq')).toBe('position 1 in the queue');
    expect(positionText(null, 3, 'cq')).toBeNull();
    expect(positionText(1, 4, null)).toBe('position 2 in the queue (5 in its ClusterQueue)');
  });
});

describe('the stepper’s start and the proposal text', () => {
  it('starts at the pinned size, else the size asked for, clamped to the range', () => {
    expect(stepperStart(elastic({ pinned_workers: 5 }))).toEqual({ min: 1, max: 8, value: 5 });
    expect(stepperStart(PENDING).value).toBe(6);
    expect(stepperStart(elastic({ workers_desired: 12 })).value).toBe(8);
  });

  it('is offered for elastic clusters holding their quota only', () => {
    expect(canScale(elastic())).toBe(true);
    expect(canScale(elastic({ state: 'starting' }))).toBe(true);
    expect(canScale(elastic({ state: 'queued' }))).toBe(false);
    expect(canScale(elastic({ elastic: false }))).toBe(false);
  });

  it('uses the fit’s message for a scale-up, says what a scale-down frees', () => {
    const message = '6 workers: must wait, 1 CPU short in flavor default; 5 would start now';
    const fit = { message } as ScaleResult['fit'];
    expect(proposalText({ cluster: elastic(), fit }, 6)).toBe(message);
    expect(proposalText({ cluster: elastic(), fit: null }, 2)).toBe(
      '2 workers: 2 workers removed, their quota freed at once'
    );
    expect(proposalText({ cluster: elastic(), fit: null }, null)).toBe(
      'the Ray autoscaler sizes it within 1–8'
    );
  });

  it('says what a scale made: the pin, and why a scale-up still waits', () => {
    const fits = { verdict: 'fits-now', message: '5 workers: fits now' };
    const waits = { verdict: 'must-wait', message: '7 workers: must wait' };
    expect(appliedText({ cluster: elastic(), fit: fits }, 5)).toBe('Pinned at 5 workers');
    expect(appliedText({ cluster: elastic(), fit: waits }, 7)).toBe(
      'Pinned at 7 workers — 7 workers: must wait'
    );
    expect(appliedText({ cluster: elastic(), fit: null }, 1)).toBe('Pinned at 1 worker');
    expect(appliedText({ cluster: elastic(), fit: null }, null)).toBe(
      'Given back to the Ray autoscaler (1–8)'
    );
  });
});

function result(workers: number | null, dryRun: boolean, fit: ScaleResult['fit']): ScaleResult {
  return {
    cluster: elastic({ pinned_workers: workers }),
    fit,
    dry_run: dryRun,
    changed: !dryRun
  };
}

const MUST_WAIT = {
  verdict: 'must-wait',
  reason: 'insufficient-quota',
  message: '6 workers: must wait, 1 CPU short in flavor default; 5 would start now',
  from: 4,
  to: 6,
  requests: { cpu: '2' },
  headroom: { cpu: '1' },
  max_obtainable: { cpu: '8' },
  flavors: { cpu: 'default' },
  starts_now: 5
} as const;

function stepper(
  scale = vi.fn(async (_n: string, w: number | null, d?: boolean) => result(w, !!d, null))
) {
  const clock = new FakeClock();
  const s = new ScaleStepper({ scale }, 'el', 250, clock);
  s.sync(elastic());
  return { s, clock, scale };
}

const settle = () => new Promise(resolve => setTimeout(resolve, 0));

describe('ScaleStepper', () => {
  it('steps within the range and dry-runs only once the clicks pause', async () => {
    const { s, clock, scale } = stepper(
      vi.fn(async (_n: string, w: number | null, d?: boolean) => result(w, !!d, MUST_WAIT))
    );
    expect(s.target).toBe(4);
    s.increment();
    clock.advance(100);
    s.increment();
    expect(s.target).toBe(6);
    expect(s.step).toEqual({ kind: 'checking', workers: 6 });
    clock.advance(249);
    expect(scale).not.toHaveBeenCalled();
    clock.advance(1);
    expect(scale).toHaveBeenCalledTimes(1);
    expect(scale).toHaveBeenLastCalledWith('el', 6, true);
    await settle();
    expect(s.step).toMatchObject({ kind: 'proposed', workers: 6, text: MUST_WAIT.message });

    // Confirm makes the change: the same number, no dry run.
    await s.confirm();
    expect(scale).toHaveBeenLastCalledWith('el', 6, false);
    expect(s.step).toMatchObject({
      kind: 'applied',
      workers: 6,
      text: `Pinned at 6 workers — ${MUST_WAIT.message}`
    });
    expect(s.dryRuns).toBe(1);
  });

  it('never leaves the range', () => {
    const { s } = stepper();
    s.setTarget(50);
    expect(s.target).toBe(8);
    s.increment();
    expect(s.target).toBe(8);
    s.setTarget(-3);
    expect(s.target).toBe(1);
    s.decrement();
    expect(s.target).toBe(1);
  });

  it('going back to the current size proposes nothing and drops the answer on its way', async () => {
    const answers: ((r: ScaleResult) => void)[] = [];
    const scale = vi.fn(
      (_n: string, w: number | null, d?: boolean) =>
        new Promise<ScaleResult>(resolve => answers.push(() => resolve(result(w, !!d, null))))
    );
    const { s, clock } = stepper(scale);
    s.decrement();
    clock.advance(250);
    s.increment(); // back at 4, the cluster's size
    expect(s.step).toEqual({ kind: 'idle' });
    answers[0]({} as ScaleResult);
    await settle();
    expect(s.step).toEqual({ kind: 'idle' });
  });

  it('keeps only the newest dry run’s answer', async () => {
    const answers: ((r: ScaleResult) => void)[] = [];
    const scale = vi.fn(
      (_n: string, w: number | null, d?: boolean) =>
        new Promise<ScaleResult>(resolve => answers.push(() => resolve(result(w, !!d, null))))
    );
    const { s, clock } = stepper(scale);
    s.decrement(); // 3
    clock.advance(250);
    s.decrement(); // 2
    clock.advance(250);
    answers[1]({} as ScaleResult);
    await settle();
    answers[0]({} as ScaleResult);
    await settle();
    expect(s.step).toMatchObject({ kind: 'proposed', workers: 2 });
    expect((s.step as { text: string }).text).toBe(
      '2 workers: 2 workers removed, their quota freed at once'
    );
  });

  it('shows a 400 inline: the field’s message for invalid_scale, the reason for not_elastic', async () => {
    const invalid = new DWRequestError(400, {
      error: 'Invalid scale',
      reason: null,
      hint: null,
      code: 'invalid_scale',
      errors: { workers: '9 is more than max_workers (8)' }
    });
    const { s, clock } = stepper(
      vi.fn(async () => {
        throw invalid;
      })
    );
    s.increment();
    clock.advance(250);
    await settle();
    expect(s.step).toEqual({
      kind: 'error',
      workers: 5,
      code: 'invalid_scale',
      message: 'Invalid scale: 9 is more than max_workers (8)'
    });
    const notElastic = new DWRequestError(400, {
      error: 'el is not an elastic cluster',
      reason: 'Kueue runs without the ElasticJobsViaWorkloadSlices feature gate',
      hint: null,
      code: 'not_elastic'
    });
    expect(scaleErrorText(notElastic)).toEqual({
      code: 'not_elastic',
      message:
        'el is not an elastic cluster: Kueue runs without the ElasticJobsViaWorkloadSlices feature gate'
    });
  });

  it('gives the size back to the autoscaler with workers null, at once', async () => {
    const { s, scale } = stepper();
    s.sync(elastic({ pinned_workers: 6 }));
    await s.release();
    expect(scale).toHaveBeenCalledWith('el', null, false);
    expect(s.step).toMatchObject({
      kind: 'applied',
      workers: null,
      text: 'Given back to the Ray autoscaler (1–8)'
    });
  });

  it('follows the cluster’s size while idle, keeps the user’s number while proposing', async () => {
    const { s, clock } = stepper();
    s.sync(elastic({ workers_desired: 5 }));
    expect(s.target).toBe(5);
    s.increment();
    clock.advance(250);
    await settle();
    s.sync(elastic({ workers_desired: 3 }));
    expect(s.target).toBe(6);
    s.cancel();
    expect(s.target).toBe(3);
    expect(s.step).toEqual({ kind: 'idle' });
  });

  it('follows the cluster again once a change is made, not after a refusal', async () => {
    let refuse = false;
    const { s, clock } = stepper(
      vi.fn(async (_n: string, w: number | null, d?: boolean) => {
        if (refuse) {
          throw new DWRequestError(400, { error: 'Invalid scale', reason: null, hint: null });
        }
        return result(w, !!d, null);
      })
    );
    s.increment();
    clock.advance(250);
    await settle();
    await s.confirm();
    expect(s.step.kind).toBe('applied');
    s.sync(elastic({ pinned_workers: 5 }));
    expect(s.target).toBe(5);
    s.sync(elastic({ workers_desired: 7 })); // released later, the autoscaler asked for 7
    expect(s.target).toBe(7);
    refuse = true;
    s.increment();
    clock.advance(250);
    await settle();
    expect(s.step.kind).toBe('error');
    s.sync(elastic({ workers_desired: 6 }));
    expect(s.target).toBe(8); // the refused choice stays, to be adjusted
  });

  it('does not emit after dispose', () => {
    const { s, clock, scale } = stepper();
    const seen = vi.fn();
    s.changed.connect(seen);
    s.increment();
    expect(seen).toHaveBeenCalledTimes(1); // checking
    s.dispose();
    clock.advance(250);
    expect(scale).not.toHaveBeenCalled();
    expect(seen).toHaveBeenCalledTimes(1);
  });
});

describe('DWModel.scale', () => {
  it('asks the API, dry run or not', async () => {
    const scale = vi.fn(async (_n: string, w: number | null, d?: boolean) => result(w, !!d, null));
    const model = new DWModel({ scale } as never, '0.1.0');
    await model.scale('el', 6, true);
    await model.scale('el', null);
    expect(scale.mock.calls).toEqual([
      ['el', 6, true],
      ['el', null, false]
    ]);
  });
});
