/**
 * The sidebar's cards for the jobs of every workload kind the server lists besides clusters
 * (RayJobs, TrainJobs, ...): one card and one section for every kind, made from the kind's
 * description (`WorkloadKind`) and what its view adds (`IJobKindView`, see `jobkinds.tsx`).
 * Kueue's state, reason and position while it decides, then the job's own controller's words;
 * who made it; its life as a timeline bar (waiting, running, its end); what its pods use of
 * what they hold (as a cluster's card words it); delete.
 */
import * as React from 'react';

import type { WorkloadKind } from '../api';
import { dwTrans } from '../i18n';
import { DWModel } from '../model';
import { IKindJob, PodSetJobs } from '../podjobs';
import { CardHead, CardReason, DeleteButton, PlacementLine, QueuePosition } from './card';
import { ErrorNote } from './status';
import { TimelineBarView } from './timeline';
import { UsageView } from './usage';

/** What a kind's cards show besides what every job card shows. */
export interface IJobKindView<T extends IKindJob = IKindJob> {
  /** The section's title (`RayJobs`). */
  title: string;
  /** What the section says while it has no job. */
  empty: string;
  /** After the queue on the card's queue line (the submission mode, the runtime). */
  detail(job: T): React.ReactNode;
  /** Lines under the position (the entrypoint, the job's cluster, its nodes). */
  body(job: T): React.ReactNode;
  /** What the delete dialog says: the job and what goes with it. */
  removes(job: T): string;
}

function JobCard(props: {
  job: IKindJob;
  kind: WorkloadKind;
  view: IJobKindView;
  me: string | null;
  onDelete: (job: IKindJob) => void;
}): JSX.Element {
  const { job: j, kind, view } = props;
  const titleId = `jp-dw-${kind.word}-${j.name}`;
  const queued = j.state === 'queued';
  const detail = view.detail(j);
  const trans = dwTrans();
  return (
    <li
      className="jp-dw-card"
      {...{ [`data-${kind.word}`]: j.name }}
      data-state={j.state}
      aria-labelledby={titleId}
    >
      <CardHead name={j.name} titleId={titleId} state={j.state} />
      <div className="jp-dw-muted jp-dw-card-queue">
        {trans.__('queue %1', j.queue ?? '?')}
        {detail ? <> · {detail}</> : null}
        {j.owner ? (
          <> · {trans.__('by %1', j.owner === props.me ? trans.__('you') : j.owner)}</>
        ) : null}
      </div>
      <PlacementLine placement={j.placement} />
      <CardReason reason={j.reason} message={j.message} summary={j.summary} always={queued} />
      <QueuePosition
        queued={queued}
        queue={j.queue}
        position={j.position_in_local_queue}
        positionInClusterQueue={j.position_in_cluster_queue}
      />
      {view.body(j)}
      <TimelineBarView name={j.name} timeline={j.timeline} />
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
export function JobsSection(props: {
  model: DWModel;
  kind: WorkloadKind;
  jobs: PodSetJobs;
  view: IJobKindView;
  scope: 'mine' | 'all';
  onDelete: (job: IKindJob) => void;
}): JSX.Element | null {
  const { model, kind, jobs: holder, view } = props;
  if (!holder.served) {
    return null;
  }
  const jobs = model.visibleJobs(holder, props.scope);
  const titleId = `jp-dw-${kind.plural}-title`;
  return (
    <section className="jp-dw-section" aria-labelledby={titleId}>
      <h3 id={titleId} className="jp-dw-section-title">
        {view.title}
      </h3>
      {holder.error ? <ErrorNote error={holder.error} /> : null}
      {jobs.length === 0 && !holder.error ? <p className="jp-dw-muted">{view.empty}</p> : null}
      <ul className="jp-dw-cards" aria-label={view.title}>
        {jobs.map(j => (
          <JobCard
            key={j.name}
            job={j}
            kind={kind}
            view={view}
            me={model.username}
            onDelete={props.onDelete}
          />
        ))}
      </ul>
    </section>
  );
}
