import * as React from 'react';

import type { Workload } from '../api';
import { dwTrans } from '../i18n';
import { colorOf } from '../shared/tones.js';
import { DWModel } from '../model';
import { firstAndMine } from '../workloadrows';
import { KueueWords } from './card';
import { ErrorNote } from './status';

// States whose words are Kueue's reason for not running (shown with them).
const WAITING_WORDS = new Set(['queued', 'evicted', 'preempted', 'rejected', 'suspended']);

// Memoized: a change re-renders the rows whose Workload changed, not thousands of others.
const WorkloadItem = React.memo(function WorkloadItem(props: {
  workload: Workload;
  mine: boolean;
}): JSX.Element {
  const w = props.workload;
  const position = w.position_in_local_queue;
  const words = WAITING_WORDS.has(w.state) && Boolean(w.reason || w.message);
  return (
    <li
      className="jp-dw-workload"
      data-workload={w.name}
      data-kind={w.owner ? w.owner.kind : ''}
      data-state={w.state}
      data-mine={props.mine ? 'true' : 'false'}
    >
      <div className="jp-dw-workload-head">
        {position !== null && position !== undefined ? (
          <span className="jp-dw-workload-position" data-position={position}>
            #{position + 1}
          </span>
        ) : null}
        <span className="jp-dw-workload-kind">{w.owner ? w.owner.kind : 'Workload'}</span>
        <span className="jp-dw-workload-name">{w.owner ? w.owner.name : w.name}</span>
        {props.mine ? <span className="jp-dw-tag">{dwTrans().__('mine')}</span> : null}
        <span
          className={`jp-dw-badge jp-dw-state-${w.state}`}
          data-badge={w.state}
          style={{ background: colorOf('state', w.state) }}
        >
          {w.state}
        </span>
        {w.placement?.worker_cluster ? (
          <span
            className="jp-dw-muted jp-dw-workload-worker"
            data-worker={w.placement.worker_cluster}
          >
            {dwTrans().__('on %1', w.placement.worker_cluster)}
          </span>
        ) : null}
      </div>
      {words ? (
        <KueueWords
          reason={w.reason}
          message={w.message}
          summary={w.summary}
          className="jp-dw-muted jp-dw-workload-words"
        />
      ) : null}
    </li>
  );
});

function QueueWorkloads(props: {
  model: DWModel;
  queue: string;
  workloads: readonly Workload[];
}): JSX.Element {
  const { model, queue, workloads } = props;
  const [expanded, setExpanded] = React.useState(false);
  const isMine = (w: Workload) => model.isMine(w);
  const shown = expanded ? workloads : firstAndMine(workloads, isMine);
  const hidden = workloads.length - shown.length;
  return (
    <div className="jp-dw-queue-workloads" data-queue={queue}>
      <div className="jp-dw-queue-name">{queue}</div>
      <ul className="jp-dw-workloads">
        {shown.map(w => (
          <WorkloadItem key={w.name} workload={w} mine={isMine(w)} />
        ))}
      </ul>
      {hidden > 0 || expanded ? (
        <button
          type="button"
          className="jp-mod-styled jp-dw-button jp-dw-workloads-more"
          aria-expanded={expanded}
          onClick={() => setExpanded(!expanded)}
        >
          {expanded
            ? dwTrans().__('Show fewer')
            : dwTrans().__('Show all %1 (%2 more)', workloads.length, hidden)}
        </button>
      ) : null}
    </div>
  );
}

/** "In my queues": every Workload of the namespace per LocalQueue, whatever job owns it. */
export function WorkloadsSection(props: { model: DWModel }): JSX.Element {
  const { model } = props;
  const queues = new Set([
    ...(model.queues?.queues.map(q => q.name) ?? []),
    ...model.workloadQueues
  ]);
  const shown = [...queues].filter(q => model.workloadsIn(q).length > 0);
  const trans = dwTrans();
  return (
    <section className="jp-dw-section jp-dw-in-queues" aria-labelledby="jp-dw-in-queues-title">
      <h3 id="jp-dw-in-queues-title" className="jp-dw-section-title">
        {trans.__('In my queues')}
      </h3>
      {model.workloadsError ? <ErrorNote error={model.workloadsError} /> : null}
      {shown.length === 0 && !model.workloadsError ? (
        <p className="jp-dw-muted">{trans.__("No workloads in the namespace's queues.")}</p>
      ) : null}
      {shown.map(queue => (
        <QueueWorkloads
          key={queue}
          model={model}
          queue={queue}
          workloads={model.workloadsIn(queue)}
        />
      ))}
    </section>
  );
}
