import * as React from 'react';

import type { Queue, QueueHolding, QueueResource } from '../api';
import { dwTrans } from '../i18n';
import { DWModel } from '../model';
import { noQueueRemedy } from '../remedies';
import { parseQuantity, resourceLabel, resourceOrder } from '../shared/resources.js';
import { ErrorNote, Remedy } from './status';
import { HoldingLine } from './usage';

function ResourceBar(props: {
  queue: string;
  resource: QueueResource;
  showFlavor: boolean;
}): JSX.Element {
  const r = props.resource;
  const trans = dwTrans();
  const label = resourceLabel(r.resource) + (props.showFlavor ? ` (${r.flavor})` : '');
  const headroom = parseQuantity(r.headroom);
  const reserved = parseQuantity(r.reserved);
  const nominal = parseQuantity(r.nominal);
  // Headroom counts what the cohort may lend, so it is shown against the most this queue
  // could ever obtain (max_obtainable, computed once by the server), not its nominal quota.
  const most = r.max_obtainable ?? r.nominal;
  const ceiling = parseQuantity(most);
  const total = Math.max(
    isNaN(ceiling) ? (isNaN(nominal) ? 0 : nominal) : ceiling,
    (isNaN(reserved) ? 0 : reserved) + (isNaN(headroom) ? 0 : headroom)
  );
  const usedShare = total > 0 && !isNaN(reserved) ? Math.min(1, reserved / total) : 0;
  const freeShare = total > 0 && !isNaN(headroom) ? Math.min(1 - usedShare, headroom / total) : 0;
  return (
    <div
      className="jp-dw-resource"
      data-resource={r.resource}
      data-flavor={r.flavor}
      data-headroom={r.headroom ?? ''}
    >
      <div className="jp-dw-resource-text">
        <span className="jp-dw-resource-name">{label}</span>
        <span className="jp-dw-resource-numbers">
          {trans.__('headroom')} <strong className="jp-dw-headroom">{r.headroom ?? '?'}</strong>
          {most !== null ? <> {trans.__('of %1', most)}</> : null}
          {r.nominal !== null && r.nominal !== most ? (
            <> · {trans.__('nominal %1', r.nominal)}</>
          ) : null}
          {r.reserved !== null ? <> · {trans.__('reserved %1', r.reserved)}</> : null}
          {r.borrowed && parseQuantity(r.borrowed) > 0 ? (
            <> · {trans.__('borrowed %1', r.borrowed)}</>
          ) : null}
        </span>
      </div>
      <div
        className="jp-dw-bar"
        role="meter"
        aria-label={trans.__('%1 headroom in queue %2', label, props.queue)}
        aria-valuemin={0}
        aria-valuemax={total || 1}
        aria-valuenow={isNaN(headroom) ? 0 : headroom}
        aria-valuetext={trans.__(
          '%1 free of at most %2',
          r.headroom ?? trans.__('unknown'),
          most ?? trans.__('unknown')
        )}
      >
        <span className="jp-dw-bar-used" style={{ width: `${usedShare * 100}%` }} />
        <span className="jp-dw-bar-free" style={{ width: `${freeShare * 100}%` }} />
      </div>
    </div>
  );
}

// Memoized: a queues message keeps the objects of unchanged queues (see sharing.ts).
const QueueItem = React.memo(function QueueItem(props: {
  queue: Queue;
  holding: QueueHolding | undefined;
}): JSX.Element {
  const q = props.queue;
  const trans = dwTrans();
  const resources = [...q.resources].sort(
    (a, b) => resourceOrder(a.resource) - resourceOrder(b.resource)
  );
  const flavors = new Set(q.resources.map(r => r.flavor));
  const headingId = `jp-dw-queue-${q.name}`;
  return (
    <li className="jp-dw-queue" data-queue={q.name} aria-labelledby={headingId}>
      <div className="jp-dw-queue-head">
        <span className="jp-dw-queue-name" id={headingId}>
          {q.name}
        </span>
        {q.default ? <span className="jp-dw-tag">{trans.__('default')}</span> : null}
        {!q.active ? (
          <span className="jp-dw-tag jp-dw-tag-warn">{trans.__('inactive')}</span>
        ) : null}
        <span className="jp-dw-muted jp-dw-queue-cq">→ {q.cluster_queue}</span>
      </div>
      <div className="jp-dw-queue-counts">
        <span data-count="pending">
          {trans.__('pending')} <strong>{q.pending}</strong>
        </span>
        {' · '}
        <span data-count="admitted">
          {trans.__('admitted')} <strong>{q.admitted}</strong>
        </span>
      </div>
      {q.multikueue ? (
        <div className="jp-dw-muted jp-dw-queue-multikueue" data-check={q.multikueue.check}>
          {q.multikueue.workers && q.multikueue.workers.length > 0
            ? trans.__(
                'runs workloads on worker clusters %1 (MultiKueue)',
                q.multikueue.workers.join(', ')
              )
            : trans.__('runs workloads on other clusters (MultiKueue)')}
        </div>
      ) : null}
      <HoldingLine queue={q.name} holding={props.holding} />
      {q.quota_visible ? null : (
        <p className="jp-dw-quota-hidden">
          {trans.__('quota hidden')}
          {q.hint ? <span className="jp-dw-hint">: {q.hint}</span> : null}
        </p>
      )}
      {resources.map(r => (
        <ResourceBar
          key={`${r.flavor}/${r.resource}`}
          queue={q.name}
          resource={r}
          showFlavor={flavors.size > 1}
        />
      ))}
    </li>
  );
});

export function QueuesSection(props: { model: DWModel }): JSX.Element {
  const { queues, queuesError } = props.model;
  const trans = dwTrans();
  return (
    <section className="jp-dw-section" aria-labelledby="jp-dw-queues-title">
      <h3 id="jp-dw-queues-title" className="jp-dw-section-title">
        {trans.__('Queues')}
      </h3>
      {queuesError ? <ErrorNote error={queuesError} /> : null}
      {queues && queues.queues.length === 0 ? (
        <div className="jp-dw-empty" data-empty="no-queue">
          <strong>{trans.__('No LocalQueue in namespace %1.', queues.namespace)}</strong>
          <Remedy remedy={noQueueRemedy(queues.namespace)} />
        </div>
      ) : null}
      {queues ? (
        <ul className="jp-dw-queues">
          {queues.queues.map(q => (
            <QueueItem key={q.name} queue={q} holding={props.model.holding(q.name)} />
          ))}
        </ul>
      ) : null}
    </section>
  );
}
