/**
 * The jobs of every workload kind the server lists, one section each, and what a kind's cards
 * add to every job card: a kind without a view of its own here gets the generic one (its
 * state, queue, position, usage and delete); a view adds kind-specific rows, keyed by the
 * kind's plural.
 */
import * as React from 'react';

import type { KubeRayJob, TrainJob, WorkloadKind } from '../api';
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
  ),
  removes: j =>
    `The RayJob ${j.name}, its cluster${j.cluster ? ` ${j.cluster}` : ''}, its submitter ` +
    `and its place in queue ${j.queue ?? ''} are removed. A running job is lost.`
};

/**
 * A Kubeflow Trainer TrainJob's card: its runtime and nodes, then Trainer's words (`running`
 * once a child Job is ready, `succeeded`, `failed` with Trainer's reason).
 */
const TRAINJOB_VIEW: Partial<IJobKindView<TrainJob>> = {
  empty: 'No TrainJob yet: submit one from a notebook (dw.TrainJobSpec) or %dw trainjob.',
  detail: j => (j.runtime ? `runtime ${j.runtime}` : null),
  body: j => (
    <div className="jp-dw-muted jp-dw-trainjob-nodes" data-trainjob-nodes={j.num_nodes ?? ''}>
      {j.num_nodes ?? '?'} node{j.num_nodes === 1 ? '' : 's'}
      {j.jobs_ready + j.jobs_succeeded + j.jobs_failed > 0
        ? ` · jobs ready ${j.jobs_ready}, succeeded ${j.jobs_succeeded}, failed ${j.jobs_failed}`
        : null}
    </div>
  ),
  removes: j =>
    `The TrainJob ${j.name}, its JobSet, its pods and its place in queue ${j.queue ?? ''} ` +
    'are removed. A running training is lost.'
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
  return {
    title: `${kind.kind}s`,
    empty: `No ${kind.kind} yet.`,
    detail: () => null,
    body: () => null,
    removes: j =>
      `The ${kind.kind} ${j.name} and its place in queue ${j.queue ?? ''} are removed. ` +
      'A running job is lost.',
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
