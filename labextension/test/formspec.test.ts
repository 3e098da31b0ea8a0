import { describe, expect, it } from 'vitest';

import {
  INITIAL_FIELDS,
  clusterRequest,
  fieldsOf,
  formErrors,
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
      worker_cpu: '1',
      worker_memory: '2Gi',
      worker_gpu: 0,
      head_cpu: '1',
      head_memory: '2Gi'
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
        worker_cpu: '1',
        worker_memory: '2Gi',
        worker_gpu: 0,
        head_cpu: '1',
        head_memory: '2Gi'
      }
    });
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
