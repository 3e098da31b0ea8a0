import * as React from 'react';

import { clockTime } from '../shared/clock.js';
import { DWModel } from '../model';

/** The version handshake's verdict when it is not "ok", with the fix. */
export function HandshakeMessage(props: { model: DWModel }): JSX.Element | null {
  const h = props.model.handshake;
  if (h.kind === 'ok') {
    return null;
  }
  if (h.kind === 'pending') {
    return <p className="jp-dw-muted">Connecting to the jupyter_dw server extension…</p>;
  }
  const check = (
    <p>
      Check with <code>jupyter server extension list</code> (it should list <code>jupyter_dw</code>{' '}
      enabled and OK) and <code>jupyter labextension list</code>, in the environment that runs this
      Jupyter server; then restart the server.
    </p>
  );
  if (h.kind === 'missing') {
    return (
      <div className="jp-dw-alert" role="alert">
        <strong>The jupyter_dw server extension is not running on this Jupyter server.</strong>
        <p>
          This panel needs it. Install <code>jupyter_dw</code> in the server's environment and
          enable it: <code>jupyter server extension enable jupyter_dw</code>.
        </p>
        {check}
      </div>
    );
  }
  if (h.kind === 'mismatch') {
    return (
      <div className="jp-dw-alert" role="alert">
        <strong>
          Version mismatch: the server extension is {h.serverVersion}, this panel is{' '}
          {h.frontendVersion}.
        </strong>
        <p>
          Both come from the same <code>jupyter_dw</code> package: reinstall it in the server's
          environment (<code>pip install --force-reinstall jupyter_dw</code>), restart the server
          and reload this page.
        </p>
        {check}
      </div>
    );
  }
  return (
    <div className="jp-dw-alert" role="alert">
      <strong>The jupyter_dw server extension did not answer: {h.message}</strong>
      {check}
    </div>
  );
}

const CONNECTION_TEXT: Record<string, string> = {
  idle: '',
  connecting: 'connecting…',
  live: 'live',
  reconnecting: 'reconnecting…',
  stopped: 'stopped'
};

/** The events socket's state, announced politely to screen readers. */
export function ConnectionStatus(props: { model: DWModel }): JSX.Element {
  const { connection, socketError } = props.model;
  return (
    <div
      className={`jp-dw-connection jp-dw-connection-${connection}`}
      role="status"
      aria-live="polite"
      data-connection={connection}
      data-reconnects={props.model.reconnects}
    >
      <span className="jp-dw-connection-dot" aria-hidden="true" />
      {CONNECTION_TEXT[connection]}
      {socketError && connection !== 'live' ? ` (${socketError.error})` : null}
    </div>
  );
}

/** An error body from the server, with its hint. */
export function ErrorNote(props: {
  error: { error: string; reason?: string | null; hint?: string | null };
}): JSX.Element {
  const { error } = props;
  return (
    <div className="jp-dw-alert" role="alert">
      <strong>{error.error}</strong>
      {error.reason ? <p>{error.reason}</p> : null}
      {error.hint ? <p className="jp-dw-hint">{error.hint}</p> : null}
    </div>
  );
}

/**
 * A banner while the server's view of the cluster may be old: a watch reconnecting (the API
 * server is away) or stale (a permission revoked, Kueue not answering). What the panel shows
 * below it is then the last known state, never presented as current.
 */
export function FreshnessBanner(props: { model: DWModel }): JSX.Element | null {
  const health = props.model.health;
  const freshness = health?.freshness;
  if (!health || !freshness || freshness.state === 'live') {
    return null;
  }
  const affected = Object.entries(health.caches)
    .filter(([, f]) => f.state !== 'live')
    .map(([plural]) => plural);
  if (health.kueue_controller.state !== 'live') {
    affected.push('Kueue');
  }
  const since = freshness.since ? clockTime(freshness.since) : null;
  const title = freshness.state === 'reconnecting' ? 'Reconnecting to Kubernetes…' : 'Stale';
  return (
    <div
      className={`jp-dw-alert jp-dw-freshness jp-dw-freshness-${freshness.state}`}
      role="status"
      aria-live="polite"
      data-freshness={freshness.state}
    >
      <strong>
        {title}
        {since ? ` since ${since}` : null}
      </strong>
      {freshness.reason ? <div>{freshness.reason}</div> : null}
      {affected.length > 1 ? (
        <div className="jp-dw-freshness-affected">Affected: {affected.join(', ')}</div>
      ) : null}
      <div className="jp-dw-muted">What is shown is the last known state.</div>
    </div>
  );
}
