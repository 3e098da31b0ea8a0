import { describe, expect, it } from 'vitest';

import type { Cluster } from '../src/api';
import { idleWarning } from '../src/idlewarning';

function cluster(warning: boolean | null): Cluster {
  const usage =
    warning === null
      ? null
      : {
          idle: true,
          idle_action: {
            action: 'stop',
            at: '2026-11-26T14:02:00Z',
            idle_seconds: 3000,
            waiting: 1,
            warning,
            held_back: false
          }
        };
  return { name: 'c', usage } as unknown as Cluster;
}

describe('idleWarning', () => {
  it('tells once, when the verdict turns to a warning', () => {
    expect(idleWarning(cluster(false), cluster(true))).toMatch(
      /^c: Will be stopped at .+ unless used/
    );
    expect(idleWarning(undefined, cluster(true))).not.toBeNull();
    expect(idleWarning(cluster(true), cluster(true))).toBeNull(); // still warned: said already
    expect(idleWarning(cluster(true), cluster(false))).toBeNull();
    expect(idleWarning(cluster(null), null)).toBeNull(); // gone
  });
});
