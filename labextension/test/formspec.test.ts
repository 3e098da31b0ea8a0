import { describe, expect, it } from 'vitest';

import type { ClusterPolicy } from '../src/api';
import {
  INITIAL_FIELDS,
  SIZE_FIELDS,
  clusterRequest,
  defaultHint,
  fieldsOf,
  formErrors,
  limitHint,
  preselectedQueue,
  rayJobRequest,
  runtimeEnvValue
} from '../src/formspec';

describe('the New form as requests', () => {
  const fields = {
    ...INITIAL_FIELDS,
    name: 'train-1',
    queue: 'team',
    workers: '2',
    worker_cpu: '1',
    image: ' ',
    entrypoint: 'python train.py',
    runtime_env: '{"pip": ["numpy"]}',
    ttl_seconds_after_finished: '60'
  };

  it('sends a cluster its own fields only, integers as numbers, empty ones left out', () => {
    expect(clusterRequest(fields)).toEqual({
      name: 'train-1',
      queue: 'team',
      workers: 2,
      worker_cpu: '1'
    });
  });

  it('sends a RayJob its fields and the same cluster fields under cluster', () => {
    expect(rayJobRequest(fields)).toEqual({
      name: 'train-1',
      queue: 'team',
      entrypoint: 'python train.py',
      runtime_env: { pip: ['numpy'] },
      submission_mode: 'K8sJobMode',
      ttl_seconds_after_finished: 60,
      cluster: {
        workers: 2,
        worker_cpu: '1'
      }
    });
  });

  it("leaves every size the user did not type to the server's defaults, in both kinds", () => {
    // The form starts with no size of its own: an administrator's default_worker_cpu
    // applies to what it creates (issue 34).
    for (const name of SIZE_FIELDS) {
      expect(INITIAL_FIELDS[name]).toBe('');
    }
    const typed = { ...INITIAL_FIELDS, name: 'only-a-name', queue: 'team' };
    expect(clusterRequest(typed)).toEqual({ name: 'only-a-name', queue: 'team' });
    expect(rayJobRequest({ ...typed, entrypoint: 'python x.py' })).toEqual({
      name: 'only-a-name',
      queue: 'team',
      entrypoint: 'python x.py',
      submission_mode: 'K8sJobMode',
      cluster: {}
    });
    // What is typed is sent as typed, a size cleared again is left out again.
    expect(clusterRequest({ ...typed, head_memory: '3Gi', worker_gpu: '1', workers: ' ' })).toEqual(
      { name: 'only-a-name', queue: 'team', head_memory: '3Gi', worker_gpu: 1 }
    );
  });

  it('leaves judging to the server: what is not JSON or a number is sent as typed', () => {
    expect(runtimeEnvValue('pip: [numpy]')).toBe('pip: [numpy]');
    const odd = rayJobRequest({
      ...fields,
      runtime_env: 'numpy',
      ttl_seconds_after_finished: '1h'
    });
    expect(odd.runtime_env).toBe('numpy');
    expect(odd.ttl_seconds_after_finished).toBe('1h');
    expect(rayJobRequest({ ...fields, runtime_env: '' }).runtime_env).toBeUndefined();
  });

  it("shows the server's errors next to the fields, cluster.<field> at the shared field", () => {
    const errors = {
      name: 'must be a DNS-1035 label',
      'cluster.worker_cpu': 'must be a CPU quantity',
      runtime_env: 'must be a mapping',
      'cluster.min_workers': 'must equal workers',
      request: 'refused by the admission webhook'
    };
    expect(formErrors('rayjob', errors)).toEqual({
      name: 'must be a DNS-1035 label',
      worker_cpu: 'must be a CPU quantity',
      runtime_env: 'must be a mapping',
      request: 'refused by the admission webhook; cluster.min_workers: must equal workers'
    });
    // A cluster form has no runtime_env and no cluster. prefix.
    expect(formErrors('cluster', { worker_cpu: 'bad', runtime_env: 'x' })).toEqual({
      worker_cpu: 'bad',
      request: 'runtime_env: x'
    });
    expect(fieldsOf('cluster')).not.toContain('entrypoint');
    expect(fieldsOf('rayjob')).toEqual(
      expect.arrayContaining([...fieldsOf('cluster'), 'entrypoint'])
    );
  });

  it("preselects the setting's queue, else the default", () => {
    const queues = [
      { name: 'a', default: false },
      { name: 'b', default: true }
    ] as never;
    expect(preselectedQueue(queues, 'a')).toBe('a');
    expect(preselectedQueue(queues, 'gone')).toBe('b');
    expect(preselectedQueue([], '')).toBe('');
  });
});

describe("the server's defaults and limits in the form", () => {
  const policy: ClusterPolicy = {
    default_image: 'quay.io/team/ray:2.60.0',
    sizes: {
      workers: { default: 2, max: 8 },
      worker_cpu: { default: '750m', max: '4' },
      worker_memory: { default: '3Gi', max: null },
      worker_gpu: { default: 0, max: 1 },
      head_cpu: { default: '1', max: null },
      head_memory: { default: '3Gi', max: '16Gi' }
    }
  };

  it('shows each default as the placeholder of its empty field', () => {
    expect(defaultHint(policy, 'worker_cpu')).toBe('default: 750m');
    expect(defaultHint(policy, 'worker_memory')).toBe('default: 3Gi');
    expect(defaultHint(policy, 'head_memory')).toBe('default: 3Gi');
    expect(defaultHint(policy, 'workers')).toBe('default: 2');
    expect(defaultHint(policy, 'worker_gpu')).toBe('default: 0');
    expect(defaultHint(policy, 'image')).toBe('default: quay.io/team/ray:2.60.0');
    expect(defaultHint(policy, 'name')).toBeUndefined(); // not a size: no server default
    // Before GET context answers, the server still applies its own: said without a value.
    expect(defaultHint(null, 'worker_cpu')).toBe('server default');
  });

  it('says each limit there is, and none where only the quota limits', () => {
    expect(limitHint(policy, 'worker_cpu')).toBe('max 4');
    expect(limitHint(policy, 'workers')).toBe('max 8');
    expect(limitHint(policy, 'worker_gpu')).toBe('max 1');
    expect(limitHint(policy, 'head_memory')).toBe('max 16Gi');
    expect(limitHint(policy, 'worker_memory')).toBeNull();
    expect(limitHint(policy, 'head_cpu')).toBeNull();
    expect(limitHint(policy, 'entrypoint')).toBeNull();
    expect(limitHint(null, 'worker_cpu')).toBeNull();
  });
});
