import * as React from 'react';

import type { KubeRayJob } from '../api';
import { DWModel } from '../model';
import { CardHead, CardReason, DeleteButton, QueuePosition } from './card';
import { ErrorNote } from './status';

/** What a RayJob card's buttons do (the plugin provides them: dialogs). */
export interface IRayJobActions {
  removeRayJob(job: KubeRayJob): Promise<void>;
}

/**
 * A KubeRay RayJob: Kueue's state, reason and position while it decides, then KubeRay's
 * (`failed` with e.g. `JobDeploymentStatusTransitionGracePeriodExceeded` and its message),
 * the cluster KubeRay made for it, delete.
 */
function RayJobCard(props: { job: KubeRayJob; actions: IRayJobActions }): JSX.Element {
  const j = props.job;
  const titleId = `jp-dw-rayjob-${j.name}`;
  const queued = j.state === 'queued';
  return (
    <li className="jp-dw-card" data-rayjob={j.name} data-state={j.state} aria-labelledby={titleId}>
      <CardHead name={j.name} titleId={titleId} state={j.state} />
      <div className="jp-dw-muted jp-dw-card-queue">
        queue {j.queue ?? '?'}
        {j.submission_mode ? <> · {j.submission_mode}</> : null}
      </div>
      <CardReason reason={j.reason} message={j.message} always={queued} />
      <QueuePosition
        queued={queued}
        queue={j.queue}
        position={j.position_in_local_queue}
        positionInClusterQueue={j.position_in_cluster_queue}
      />
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
      <div className="jp-dw-card-actions">
        <DeleteButton
          name={j.name}
          disabled={j.state === 'deleting'}
          onDelete={() => void props.actions.removeRayJob(j)}
        />
      </div>
    </li>
  );
}

/** Every RayJob of the namespace, live from the events socket (nothing polls). */
export function RayJobsSection(props: {
  model: DWModel;
  actions: IRayJobActions;
}): JSX.Element | null {
  const { model } = props;
  if (!model.rayjobsServed) {
    return null;
  }
  const jobs = model.rayjobs;
  return (
    <section className="jp-dw-section" aria-labelledby="jp-dw-rayjobs-title">
      <h3 id="jp-dw-rayjobs-title" className="jp-dw-section-title">
        RayJobs
      </h3>
      {model.rayjobsError ? <ErrorNote error={model.rayjobsError} /> : null}
      {jobs.length === 0 && !model.rayjobsError ? (
        <p className="jp-dw-muted">No RayJob yet: submit one below (New: RayJob).</p>
      ) : null}
      <ul className="jp-dw-cards" aria-label="RayJobs">
        {jobs.map(j => (
          <RayJobCard key={j.name} job={j} actions={props.actions} />
        ))}
      </ul>
    </section>
  );
}
