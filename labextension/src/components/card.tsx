/**
 * What every workload card shows alike (a Ray cluster's, a RayJob's): the head with the name
 * and the state badge, Kueue's or KubeRay's reason and message, the queue position while
 * queued, the delete button.
 */
import * as React from 'react';

import type { Freshness, Placement } from '../api';
import { dwTrans } from '../i18n';
import { colorOf } from '../shared/tones.js';

/** The card's name, its state badge and, when the server's view may be old, a stale badge. */
export function CardHead(props: {
  name: string;
  titleId: string;
  state: string;
  freshness?: Freshness;
}): JSX.Element {
  const { freshness } = props;
  const trans = dwTrans();
  return (
    <div className="jp-dw-card-head">
      <span className="jp-dw-card-name" id={props.titleId}>
        {props.name}
      </span>
      <span
        className={`jp-dw-badge jp-dw-state-${props.state}`}
        data-badge={props.state}
        style={{ background: colorOf('state', props.state) }}
      >
        {props.state}
      </span>
      {freshness && freshness.state !== 'live' ? (
        <span
          className="jp-dw-badge jp-dw-stale"
          data-freshness={freshness.state}
          title={freshness.reason ?? undefined}
        >
          {freshness.state === 'reconnecting' ? trans.__('reconnecting…') : trans.__('stale')}
        </span>
      ) : null}
    </div>
  );
}

/**
 * Where MultiKueue sent the workload (the server's sentence): the worker cluster it runs on, or
 * those it was offered to. Nothing without MultiKueue (or from an older server).
 */
export function PlacementLine(props: { placement?: Placement | null }): JSX.Element | null {
  const { placement } = props;
  if (!placement) {
    return null;
  }
  return (
    <div className="jp-dw-placement" data-worker={placement.worker_cluster ?? ''}>
      ⇒ {placement.sentence}
    </div>
  );
}

/** A message without a summary this long or longer is folded to one line too. */
export const ONE_LINE_CHARS = 90;

/**
 * The reason (Kueue's or KubeRay's word) and its message in one line: Kueue's `summary`
 * (`needs 1.5 CPU more in flavor X`) when the server made one, else the message, with the
 * whole message on expand; a short message without a summary is shown whole. Nothing is cut
 * without a way to read it (the line's title holds the whole message too).
 */
export function KueueWords(props: {
  reason: string | null | undefined;
  message: string | null | undefined;
  summary?: string | null;
  className?: string;
}): JSX.Element {
  const { reason, message } = props;
  const summary = props.summary && props.summary !== message ? props.summary : null;
  const className = `jp-dw-card-reason${props.className ? ` ${props.className}` : ''}`;
  const head = reason ? <span className="jp-dw-reason">{reason}</span> : null;
  const colon = reason ? <span className="jp-dw-colon">: </span> : null;
  if (!message || (!summary && message.length < ONE_LINE_CHARS)) {
    return (
      <div className={className}>
        {head}
        {message ? (
          <>
            {colon}
            <span className="jp-dw-message">{message}</span>
          </>
        ) : null}
      </div>
    );
  }
  return (
    <details className={`${className} jp-dw-folded`} data-summary={summary ? 'kueue' : 'message'}>
      <summary title={message}>
        <span className="jp-dw-oneline">
          {head}
          {colon}
          <span className="jp-dw-summary">{summary ?? message}</span>
        </span>
      </summary>
      <div className="jp-dw-message">{message}</div>
    </details>
  );
}

/** The card's waiting reason: Kueue's words (see `KueueWords`); nothing while it says none. */
export function CardReason(props: {
  reason: string | null | undefined;
  message: string | null | undefined;
  summary?: string | null;
  always?: boolean;
}): JSX.Element | null {
  if (!props.always && !props.reason && !props.message) {
    return null;
  }
  return <KueueWords reason={props.reason} message={props.message} summary={props.summary} />;
}

/** "position N in queue Q" (1 is next), while Kueue keeps the workload waiting. */
export function QueuePosition(props: {
  queued: boolean;
  queue: string | null | undefined;
  position: number | null | undefined;
  positionInClusterQueue: number | null | undefined;
  clusterQueue?: string | null;
}): JSX.Element | null {
  const { position, positionInClusterQueue } = props;
  if (!props.queued || position === null || position === undefined) {
    return null;
  }
  const trans = dwTrans();
  return (
    <div className="jp-dw-position" data-position={position}>
      {trans.__('position %1 in queue %2', position + 1, props.queue ?? '')}
      {positionInClusterQueue !== null && positionInClusterQueue !== undefined
        ? ` ${trans.__(
            '(%1 in %2)',
            positionInClusterQueue + 1,
            props.clusterQueue ?? trans.__('its ClusterQueue')
          )}`
        : null}
    </div>
  );
}

/** The card's Delete button (the plugin's action asks for confirmation). */
export function DeleteButton(props: {
  name: string;
  disabled: boolean;
  onDelete: () => void;
}): JSX.Element {
  const trans = dwTrans();
  return (
    <button
      type="button"
      className="jp-mod-styled jp-mod-warn jp-dw-button"
      aria-label={trans.__('Delete %1', props.name)}
      disabled={props.disabled}
      onClick={props.onDelete}
    >
      {trans.__('Delete')}
    </button>
  );
}
