import { describe, expect, it } from 'vitest';

import { DOCTOR_COMMAND, noQueueRemedy, remedyFor } from '../src/remedies';

describe('remedyFor', () => {
  it('sends a missing permission to the doctor and its fix', () => {
    const remedy = remedyFor({ code: 'forbidden', denied: 'list clusterqueues.kueue.x-k8s.io' });
    expect(remedy?.kind).toBe('permission');
    expect(remedy?.command).toBe(DOCTOR_COMMAND);
    expect(remedy?.text).toContain('Role and RoleBinding');
  });

  it('names the product that is not installed', () => {
    expect(remedyFor({ code: 'kueue_not_installed' })?.text).toContain('Kueue is installed');
    expect(remedyFor({ code: 'kuberay_not_installed' })?.text).toContain('KubeRay is installed');
    expect(remedyFor({ code: 'kuberay_not_installed' })?.kind).toBe('install');
  });

  it('has nothing to add where the hint says all', () => {
    expect(remedyFor({ code: 'not_found' })).toBeNull();
    expect(remedyFor({})).toBeNull();
  });
});

describe('noQueueRemedy', () => {
  it('says whom to ask and for what, in which namespace', () => {
    const remedy = noQueueRemedy('team-a');
    expect(remedy.text).toContain('cluster administrator');
    expect(remedy.text).toContain('LocalQueue in namespace team-a');
    expect(remedy.text).toContain('ClusterQueue');
    expect(remedy.command).toBe('kubectl get localqueues -n team-a');
  });
});
