/**
 * The sidebar's cards for jobs made of pod sets besides clusters (RayJobs, TrainJobs): one card
 * and one section for every kind, a kind being what its card adds (`IJobKindView`). Kueue's
 * state, reason and position while it decides, then the job's own controller's words; who made
 * it; what its pods use of what they hold (as a cluster's card words it); delete.
 */
import * as React from 'react';

import type { KubeRayJob, TrainJob } from '../api';
import { DWModel } from '../model';
import { PodSetJobs } from '../podjobs';
import { CardHead, CardReason, DeleteButton, QueuePosition } from './card';
import { ErrorNote } from './status';
import { UsageView } from './usage';

type PodSetJob = KubeRayJob | TrainJob;

/** What a kind's cards show besides what every job card shows. */
export interface IJobKindView<T extends PodSetJob> {
  /** The message word (`rayjob`, `trainjob`): the cards' `data-<kind>` and the ids. */
  kind: 'rayjob' | 'trainjob';
  title: string;
  empty: string;
  /** After the queue on the card's queue line (the submission mode, the runtime). */
  detail(job: T): React.ReactNode;
  /** Lines under the position (the entrypoint, the job's cluster, its nodes). */
  body(job: T): React.ReactNode;
}

function JobCard<T extends PodSetJob>(props: {
  job: T;
  view: IJobKindView<T>;
  me: string | null;
  onDelete: (job: T) => void;
}): JSX.Element {
  const { job: j, view } = props;
  const titleId = `jp-dw-${view.kind}-${j.name}`;
  const queued = j.state === 'queued';
  const detail = view.detail(j);
  return (
    <li
      className="jp-dw-card"
      {...{ [`data-${view.kind}`]: j.name }}
      data-state={j.state}
      aria-labelledby={titleId}
    >
      <CardHead name={j.name} titleId={titleId} state={j.state} />
      <div className="jp-dw-muted jp-dw-card-queue">
        queue {j.queue ?? '?'}
        {detail ? <> · {detail}</> : null}
        {j.owner ? <> · by {j.owner === props.me ? 'you' : j.owner}</> : null}
      </div>
      <CardReason reason={j.reason} message={j.message} always={queued} />
      <QueuePosition
        queued={queued}
        queue={j.queue}
        position={j.position_in_local_queue}
        positionInClusterQueue={j.position_in_cluster_queue}
      />
      {view.body(j)}
      <UsageView name={j.name} usage={j.usage} />
      <div className="jp-dw-card-actions">
        <DeleteButton
          name={j.name}
          disabled={j.state === 'deleting'}
          onDelete={() => props.onDelete(j)}
        />
      </div>
    </li>
  );
}

/** Every job of one kind (all, or those this identity made), live from the events socket. */
export function JobsSection<T extends PodSetJob>(props: {
  model: DWModel;
  jobs: PodSetJobs<T>;
  view: IJobKindView<T>;
  scope: 'mine' | 'all';
  onDelete: (job: T) => void;
}): JSX.Element | null {
  const { model, jobs: kind, view } = props;
  if (!kind.served) {
    return null;
  }
  const jobs = model.visibleJobs(kind, props.scope);
  const titleId = `jp-dw-${view.kind}s-title`;
  return (
    <section className="jp-dw-section" aria-labelledby={titleId}>
      <h3 id={titleId} className="jp-dw-section-title">
        {view.title}
      </h3>
      {kind.error ? <ErrorNote error={kind.error} /> : null}
      {jobs.length === 0 && !kind.error ? <p className="jp-dw-muted">{view.empty}</p> : null}
      <ul className="jp-dw-cards" aria-label={view.title}>
        {jobs.map(j => (
          <JobCard key={j.name} job={j} view={view} me={model.username} onDelete={props.onDelete} />
        ))}
      </ul>
    </section>
  );
}
