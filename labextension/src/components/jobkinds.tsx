/**
 * The jobs of every workload kind the server lists, one section each, and what a kind's cards
 * add to every job card: a kind without a view of its own here gets the generic one (its
 * state, queue, position, usage and delete); a view adds kind-specific rows, keyed by the
 * kind's plural.
 */
import * as React from 'react';

import type { KubeRayJob, TrainJob, WorkloadKind } from '../api';
import { dwTrans } from '../i18n';
import { DWModel } from '../model';
import { IKindJob } from '../podjobs';
import { IJobKindView, JobsSection } from './podjobs';

/** What the job cards' buttons do (the plugin provides them: dialogs). */
export interface IJobActions {
  removeJob(kind: WorkloadKind, job: IKindJob): Promise<void>;
}

/**
 * A KubeRay RayJob's card: its submission mode, then KubeRay's words (`failed` with e.g.
 * `JobDeploymentStatusTransitionGracePeriodExceeded` and its message), its entrypoint and
 * the cluster KubeRay made for it.
 */
const RAYJOB_VIEW: Partial<IJobKindView<KubeRayJob>> = {
  // A getter: the words are translated when a view is made (`viewOf`), not at module load.
  get empty() {
    return dwTrans().__('No RayJob yet: submit one below (New: RayJob).');
  },
  detail: j => j.submission_mode,
  body: j => (
    <>
      {j.entrypoint ? (
        <div className="jp-dw-rayjob-entrypoint">
          <code title={dwTrans().__('entrypoint')}>{j.entrypoint}</code>
        </div>
      ) : null}
      {j.cluster ? (
        <div className="jp-dw-muted jp-dw-rayjob-cluster" data-rayjob-cluster={j.cluster}>
          {dwTrans().__('its cluster %1', j.cluster)}
        </div>
      ) : null}
    </>
  ),
  removes: j =>
    j.cluster
      ? dwTrans().__(
          'The RayJob %1, its cluster %2, its submitter and its place in queue %3 are removed. A running job is lost.',
          j.name,
          j.cluster,
          j.queue ?? ''
        )
      : dwTrans().__(
          'The RayJob %1, its cluster, its submitter and its place in queue %2 are removed. A running job is lost.',
          j.name,
          j.queue ?? ''
        )
};

/**
 * A Kubeflow Trainer TrainJob's card: its runtime and nodes, then Trainer's words (`running`
 * once a child Job is ready, `succeeded`, `failed` with Trainer's reason).
 */
const TRAINJOB_VIEW: Partial<IJobKindView<TrainJob>> = {
  get empty() {
    return dwTrans().__(
      'No TrainJob yet: submit one from a notebook (dw.TrainJobSpec) or %dw trainjob.'
    );
  },
  detail: j => (j.runtime ? dwTrans().__('runtime %1', j.runtime) : null),
  body: j => {
    const trans = dwTrans();
    const nodes = j.num_nodes ?? null;
    return (
      <div className="jp-dw-muted jp-dw-trainjob-nodes" data-trainjob-nodes={j.num_nodes ?? ''}>
        {nodes === null ? trans.__('? nodes') : trans._n('%1 node', '%1 nodes', nodes)}
        {j.jobs_ready + j.jobs_succeeded + j.jobs_failed > 0
          ? ` · ${trans.__(
              'jobs ready %1, succeeded %2, failed %3',
              j.jobs_ready,
              j.jobs_succeeded,
              j.jobs_failed
            )}`
          : null}
      </div>
    );
  },
  removes: j =>
    dwTrans().__(
      'The TrainJob %1, its JobSet, its pods and its place in queue %2 are removed. A running training is lost.',
      j.name,
      j.queue ?? ''
    )
};

/** A view's rows for the records of its own kind (the records under its plural are). */
function rows<T extends IKindJob>(view: Partial<IJobKindView<T>>): Partial<IJobKindView> {
  return view as unknown as Partial<IJobKindView>;
}

/** The kinds with rows of their own, by plural; every other kind shows the generic card. */
export const KIND_VIEWS: Readonly<Record<string, Partial<IJobKindView>>> = {
  rayjobs: rows(RAYJOB_VIEW),
  trainjobs: rows(TRAINJOB_VIEW)
};

/** How the cards of `kind` look: its own view's rows over the generic ones. */
export function viewOf(kind: WorkloadKind): IJobKindView {
  const trans = dwTrans();
  return {
    // The kind's name is the server's (`RayJob`); the plural around it is translated.
    title: trans.__('%1s', kind.kind),
    empty: trans.__('No %1 yet.', kind.kind),
    detail: () => null,
    body: () => null,
    removes: j =>
      trans.__(
        'The %1 %2 and its place in queue %3 are removed. A running job is lost.',
        kind.kind,
        j.name,
        j.queue ?? ''
      ),
    ...KIND_VIEWS[kind.plural]
  };
}

/** Every job of every kind, a section per kind in the server's order (each where served). */
export function PodSetJobsSections(props: {
  model: DWModel;
  scope: 'mine' | 'all';
  actions: IJobActions;
}): JSX.Element {
  const { model, scope, actions } = props;
  return (
    <>
      {model.kinds.map(kind => (
        <JobsSection
          key={kind.plural}
          model={model}
          kind={kind}
          jobs={model.jobsOf(kind.plural)}
          view={viewOf(kind)}
          scope={scope}
          onDelete={j => void actions.removeJob(kind, j)}
        />
      ))}
    </>
  );
}
