import * as React from 'react';

import type { KubeRayJob, TrainJob } from '../api';
import { DWModel } from '../model';
import { IJobKindView, JobsSection } from './podjobs';

/** What the RayJob and TrainJob cards' buttons do (the plugin provides them: dialogs). */
export interface IRayJobActions {
  removeRayJob(job: KubeRayJob): Promise<void>;
  removeTrainJob(job: TrainJob): Promise<void>;
}

/**
 * A KubeRay RayJob's card: its submission mode, then KubeRay's words (`failed` with e.g.
 * `JobDeploymentStatusTransitionGracePeriodExceeded` and its message), its entrypoint and
 * the cluster KubeRay made for it.
 */
export const RAYJOB_VIEW: IJobKindView<KubeRayJob> = {
  kind: 'rayjob',
  title: 'RayJobs',
  empty: 'No RayJob yet: submit one below (New: RayJob).',
  detail: j => j.submission_mode,
  body: j => (
    <>
      {j.entrypoint ? (
        <div className="jp-dw-rayjob-entrypoint">
          <code title="entrypoint">{j.entrypoint}</code>
        </div>
      ) : null}
      {j.cluster ? (
        <div className="jp-dw-muted jp-dw-rayjob-cluster" data-rayjob-cluster={j.cluster}>
          its cluster {j.cluster}
        </div>
      ) : null}
    </>
  )
};

/**
 * A Kubeflow Trainer TrainJob's card: its runtime and nodes, then Trainer's words (`running`
 * once a child Job is ready, `succeeded`, `failed` with Trainer's reason).
 */
export const TRAINJOB_VIEW: IJobKindView<TrainJob> = {
  kind: 'trainjob',
  title: 'TrainJobs',
  empty: 'No TrainJob yet: submit one from a notebook (dw.TrainJobSpec) or %dw trainjob.',
  detail: j => (j.runtime ? `runtime ${j.runtime}` : null),
  body: j => (
    <div className="jp-dw-muted jp-dw-trainjob-nodes" data-trainjob-nodes={j.num_nodes ?? ''}>
      {j.num_nodes ?? '?'} node{j.num_nodes === 1 ? '' : 's'}
      {j.jobs_ready + j.jobs_succeeded + j.jobs_failed > 0
        ? ` · jobs ready ${j.jobs_ready}, succeeded ${j.jobs_succeeded}, failed ${j.jobs_failed}`
        : null}
    </div>
  )
};

/** Every RayJob of the namespace, then every TrainJob (each kind only where it is served). */
export function PodSetJobsSections(props: {
  model: DWModel;
  scope: 'mine' | 'all';
  actions: IRayJobActions;
}): JSX.Element {
  const { model, scope, actions } = props;
  return (
    <>
      <JobsSection
        model={model}
        jobs={model.rayjobJobs}
        view={RAYJOB_VIEW}
        scope={scope}
        onDelete={j => void actions.removeRayJob(j)}
      />
      <JobsSection
        model={model}
        jobs={model.trainjobJobs}
        view={TRAINJOB_VIEW}
        scope={scope}
        onDelete={j => void actions.removeTrainJob(j)}
      />
    </>
  );
}
