/**
 * What every workload card shows alike (a Ray cluster's, a RayJob's): the head with the name
 * and the state badge, Kueue's or KubeRay's reason and message, the queue position while
 * queued, the delete button.
 */
import * as React from 'react';

import type { Freshness } from '../api';
import { colorOf } from '../shared/tones.js';

/** The card's name, its state badge and, when the server's view may be old, a stale badge. */
export function CardHead(props: {
  name: string;
  titleId: string;
  state: string;
  freshness?: Freshness;
}): JSX.Element {
  const { freshness } = props;
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
          {freshness.state === 'reconnecting' ? 'reconnecting…' : 'stale'}
        </span>
      ) : null}
    </div>
  );
}

/** The reason (Kueue's or KubeRay's word) and its message, as they said them. */
export function CardReason(props: {
  reason: string | null | undefined;
  message: string | null | undefined;
  always?: boolean;
}): JSX.Element | null {
  const { reason, message } = props;
  if (!props.always && !reason && !message) {
    return null;
  }
  return (
    <div className="jp-dw-card-reason">
      {reason ? <span className="jp-dw-reason">{reason}</span> : null}
      {message ? (
        <span className="jp-dw-message">
          {reason ? ': ' : ''}
          {message}
        </span>
      ) : null}
    </div>
  );
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
  return (
    <div className="jp-dw-position" data-position={position}>
      position {position + 1} in queue {props.queue}
      {positionInClusterQueue !== null && positionInClusterQueue !== undefined
        ? ` (${positionInClusterQueue + 1} in ${props.clusterQueue ?? 'its ClusterQueue'})`
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
  return (
    <button
      type="button"
      className="jp-mod-styled jp-mod-warn jp-dw-button"
      aria-label={`Delete ${props.name}`}
      disabled={props.disabled}
      onClick={props.onDelete}
    >
      Delete
    </button>
  );
}
