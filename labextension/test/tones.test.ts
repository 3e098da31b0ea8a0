import { describe, expect, it } from 'vitest';

import type { ClusterState } from '../src/api';
import type { components } from '../src/openapi';
import { TONE_TABLE, colorOf, toneOf } from '../src/shared/tones.js';

type Schemas = components['schemas'];

// Every value of the generated types, as the sidebar receives them (typed as Records so an
// editor flags a state missing here; tests/unit/test_tones.py checks openapi.yaml itself).
const CLUSTER_STATES: Record<ClusterState, true> = {
  queued: true,
  'waiting-for-capacity': true,
  admitted: true,
  starting: true,
  stalled: true,
  ready: true,
  evicted: true,
  preempted: true,
  suspended: true,
  failed: true,
  rejected: true,
  deleting: true
};
const WORKLOAD_STATES: Record<Schemas['WorkloadState'], true> = {
  queued: true,
  'waiting-for-capacity': true,
  admitted: true,
  evicted: true,
  preempted: true,
  suspended: true,
  rejected: true,
  finished: true,
  deleting: true
};
const JOB_STATUSES: Record<Schemas['RayJob']['status'], true> = {
  PENDING: true,
  RUNNING: true,
  STOPPED: true,
  SUCCEEDED: true,
  FAILED: true
};

describe('tones.js, the one table of colours', () => {
  it('gives every state the REST API describes a tone', () => {
    for (const state of [...Object.keys(CLUSTER_STATES), ...Object.keys(WORKLOAD_STATES)]) {
      expect(TONE_TABLE.state[state], state).toBeDefined();
    }
    for (const status of Object.keys(JOB_STATUSES)) {
      expect(TONE_TABLE.job[status], status).toBeDefined();
    }
  });

  it("colours with JupyterLab's variable and the table's fallback", () => {
    expect(colorOf('state', 'ready')).toBe('var(--jp-success-color1, #2f855a)');
    expect(colorOf('verdict', 'must-wait')).toBe('var(--jp-warn-color1, #b7791f)');
    expect(colorOf('job', 'FAILED')).toBe('var(--jp-error-color1, #c53030)');
  });

  it('draws an unknown value neutral', () => {
    expect(toneOf('state', 'no-such-state')).toBe('neutral');
    expect(toneOf('state', null)).toBe('neutral');
    expect(colorOf('verdict', undefined)).toBe('var(--jp-layout-color4, #718096)');
  });
});
