/**
 * What to do about an empty or broken state, in one place: the sentence the sidebar shows
 * under an error (by the server's `code`) and for a namespace without a queue. Pure: the views
 * render what these return.
 */
import type { ErrorBody } from './api';
import { dwTrans } from './i18n';

/** The doctor: it lists every permission jupyter_dw uses and prints the RBAC that grants them. */
export const DOCTOR_COMMAND = 'jupyter dw doctor';

/** One thing to do: a sentence, and the command it names (shown as code), if any. */
export interface IRemedy {
  /** What it is about: `permission`, `install`, `starting`, `no-queue`. */
  kind: string;
  text: string;
  command: string | null;
}

/** The products whose absence a `<product>_not_installed` code names. */
const PRODUCTS: Record<string, string> = {
  kueue_not_installed: 'Kueue',
  kuberay_not_installed: 'KubeRay',
  trainer_not_installed: 'Kubeflow Trainer'
};

/**
 * What to do about `error` beyond the server's own hint (which says whom to ask): how to see
 * the whole picture and the fix. Null when the hint says all there is.
 */
export function remedyFor(error: Pick<ErrorBody, 'code' | 'denied'>): IRemedy | null {
  const trans = dwTrans();
  const code = error.code ?? null;
  if (code === 'forbidden' || (error.denied ?? null) !== null) {
    return {
      kind: 'permission',
      text: trans.__(
        'In a terminal of this Jupyter server, run the doctor: it lists every permission jupyter_dw uses, which of them this identity lacks, and prints the YAML (a Role and RoleBinding) a cluster administrator applies to grant them. Once it is applied, this panel shows what it allows within a minute, without a restart.'
      ),
      command: DOCTOR_COMMAND
    };
  }
  if (code !== null && code in PRODUCTS) {
    return {
      kind: 'install',
      text: trans.__(
        'Until %1 is installed this part of the panel stays empty; once it is, it fills in by itself (within a minute, or at the first action that needs it). The doctor says what the cluster serves and what is missing.',
        PRODUCTS[code]
      ),
      command: DOCTOR_COMMAND
    };
  }
  if (code === 'not_ready') {
    return {
      kind: 'starting',
      text: trans.__('The server extension is still starting: this panel fills in by itself.'),
      command: null
    };
  }
  return null;
}

/** What to do when namespace `namespace` has no LocalQueue: whom to ask, and for what. */
export function noQueueRemedy(namespace: string): IRemedy {
  const trans = dwTrans();
  return {
    kind: 'no-queue',
    text: trans.__(
      'Ray clusters and jobs wait in a Kueue LocalQueue, and namespace %1 has none. Ask your cluster administrator for a LocalQueue in namespace %1 that points at a ClusterQueue with quota for you (CPU and memory, GPUs if you need them). Once it exists it shows here by itself.',
      namespace
    ),
    command: `kubectl get localqueues -n ${namespace}`
  };
}
