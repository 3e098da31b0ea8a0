import { describe, expect, it } from 'vitest';

import {
  amountText,
  holdingText,
  idleText,
  rayText,
  ruleText,
  usageRows
} from '../src/shared/usage_bar.js';
import type { IUsageInput } from '../src/shared/usage_bar.js';
import { clockTime } from '../src/shared/clock.js';

function usage(over: Partial<IUsageInput> = {}): IUsageInput {
  return {
    resources: {
      memory: { held: '8Gi', used: '2516582400' },
      cpu: { held: '4', used: '1437m' },
      'nvidia.com/gpu': { held: '1', used: '0' }
    },
    reason: null,
    ray: {
      resources: { CPU: { used: 0, total: 4 }, GPU: { used: 0, total: 1 } },
      jobs_running: 0,
      jobs_pending: 0,
      actors_alive: 0
    },
    ray_reason: null,
    idle: false,
    idle_basis: 'ray',
    idle_since: null,
    ...over
  };
}

const NO_METRICS = 'the metrics API (metrics.k8s.io/v1beta1) is not served here';

describe('usage_bar.js: what a cluster uses against what it holds, in words', () => {
  it('words quantities short: CPU in cores, memory in binary units', () => {
    expect(amountText('cpu', '1437m')).toBe('1.4');
    expect(amountText('cpu', '250m')).toBe('0.25');
    expect(amountText('cpu', '2000173n')).toBe('2m');
    expect(amountText('cpu', '0')).toBe('0');
    expect(amountText('cpu', '12')).toBe('12');
    expect(amountText('memory', '8Gi')).toBe('8Gi');
    expect(amountText('memory', '2516582400')).toBe('2.3Gi');
    expect(amountText('memory', '512Mi')).toBe('512Mi');
    expect(amountText('nvidia.com/gpu', '2')).toBe('2');
    expect(amountText('cpu', 'nonsense')).toBe('nonsense');
    expect(amountText('cpu', null)).toBe('?');
  });

  it('makes one row per resource, CPU, memory, GPU, "used of held" with the bar filled', () => {
    const rows = usageRows(usage());
    expect(rows.map(r => r.text)).toEqual([
      'CPU 1.4 of 4 used',
      'Memory 2.3Gi of 8Gi used',
      'GPU 0 of 1 used by Ray'
    ]);
    expect(rows[0].share).toBeCloseTo(1.437 / 4);
    expect(rows[2].share).toBe(0);
    expect(rows.every(r => r.unknown === null)).toBe(true);
  });

  it('says the held amount and the reason when the use is unknown, never a zero', () => {
    const rows = usageRows(
      usage({
        resources: {
          cpu: { held: '4', used: null },
          'nvidia.com/gpu': { held: '1', used: null }
        },
        reason: NO_METRICS,
        ray: null,
        ray_reason: 'the head is not ready'
      })
    );
    expect(rows[0]).toMatchObject({ text: 'CPU 4 held', share: null, unknown: NO_METRICS });
    expect(rows[1]).toMatchObject({ text: 'GPU 1 held', unknown: 'the head is not ready' });
    expect(usageRows(null)).toEqual([]);
  });

  it('says how long an idle cluster has been idle and what it holds', () => {
    const since = '2026-11-26T10:00:00Z';
    const now = Date.parse(since) + 42 * 60000 + 30000;
    expect(idleText(usage({ idle: true, idle_since: since }), now)).toBe(
      `Idle 42 min (since ${clockTime(since)}), holding 4 CPU and 1 GPU`
    );
    expect(idleText(usage({ idle: true, idle_basis: 'metrics' }), now)).toBe(
      'Idle, holding 4 CPU and 1 GPU — by CPU use (Ray not asked)'
    );
    expect(idleText(usage({ idle: false }), now)).toBeNull();
    expect(idleText(usage({ idle: null }), now)).toBeNull();
  });

  it("words Ray's own load in one line, or why Ray could not tell", () => {
    expect(rayText(usage())).toBe(
      'Ray: 0 of 4 CPU in use, 0 of 1 GPU in use, 0 jobs running, 0 actors'
    );
    const busy = usage({
      ray: {
        resources: { CPU: { used: 2, total: 4 } },
        jobs_running: 1,
        jobs_pending: 2,
        actors_alive: 1
      }
    });
    expect(rayText(busy)).toBe('Ray: 2 of 4 CPU in use, 1 job running, 2 jobs pending, 1 actor');
    expect(rayText(usage({ ray: null, ray_reason: 'the head is not ready' }))).toBe(
      'Ray: the head is not ready'
    );
    expect(rayText(usage({ ray: null }))).toBeNull();
  });

  it("words a queue's holding as the server summed it", () => {
    expect(
      holdingText('team-a', {
        clusters: 3,
        resources: {
          cpu: { held: '12', used: '1400m' },
          memory: { held: '48Gi', used: '3Gi' },
          'nvidia.com/gpu': { held: '2', used: '0' }
        }
      })
    ).toBe('Your 3 clusters hold 12 CPU and 2 GPU of team-a; they use 1.4 CPU and 0 GPU now');
    expect(
      holdingText('team-a', {
        clusters: 1,
        resources: { cpu: { held: '4', used: '1' }, 'nvidia.com/gpu': { held: '1', used: null } }
      })
    ).toBe('Your cluster holds 4 CPU and 1 GPU of team-a; it uses 1 CPU now (GPU use unknown)');
    expect(
      holdingText('team-a', { clusters: 1, resources: { cpu: { held: '4', used: null } } })
    ).toBe('Your cluster holds 4 CPU of team-a; its use is unknown now');
    expect(holdingText('team-a', { clusters: 0, resources: {} })).toBeNull();
    expect(holdingText('team-a', undefined)).toBeNull();
  });
});

describe('ruleText', () => {
  const at = '2026-11-26T14:02:00Z';
  const action = (extra: Record<string, unknown>) =>
    usage({
      idle: true,
      idle_action: {
        action: 'stop',
        at,
        idle_seconds: 3000,
        waiting: 2,
        warning: false,
        held_back: false,
        ...extra
      }
    });

  it('says when the rule acts, and warns once it is near', () => {
    const clock = clockTime(at);
    expect(ruleText(action({}))).toBe(
      `The idle rule will stop it at ${clock} if it stays idle (2 workloads wait for quota)`
    );
    expect(ruleText(action({ warning: true, waiting: 1 }))).toBe(
      `Will be stopped at ${clock} unless used: 1 workload waits for quota`
    );
    expect(ruleText(action({ held_back: true, action: 'delete' }))).toBe(
      `The idle rule would have deleted it at ${clock}; it waits while no workload needs the quota`
    );
    expect(ruleText(usage({ idle: true }))).toBeNull();
  });
});
