import * as React from 'react';

import { clockTime } from '../shared/clock.js';
import type { ErrorBody } from '../api';
import { dwTrans } from '../i18n';
import { DWModel } from '../model';
import { IRemedy, remedyFor } from '../remedies';

/** The version handshake's verdict when it is not "ok", with the fix. */
export function HandshakeMessage(props: { model: DWModel }): JSX.Element | null {
  const h = props.model.handshake;
  const trans = dwTrans();
  if (h.kind === 'ok') {
    return null;
  }
  if (h.kind === 'pending') {
    return (
      <p className="jp-dw-muted">{trans.__('Connecting to the jupyter_dw server extension…')}</p>
    );
  }
  const check = (
    <p>
      <Command
        text={trans.__(
          'Check with %1 (it should list jupyter_dw enabled and OK) and %2, in the environment that runs this Jupyter server; then restart the server.',
          '%1',
          '%2'
        )}
        commands={['jupyter server extension list', 'jupyter labextension list']}
      />
    </p>
  );
  if (h.kind === 'missing') {
    return (
      <div className="jp-dw-alert" role="alert" data-broken="server-extension-missing">
        <strong>
          {trans.__('The jupyter_dw server extension is not running on this Jupyter server.')}
        </strong>
        <p>
          <Command
            text={trans.__(
              "This panel needs it. Install jupyter_dw in the server's environment and enable it: %1.",
              '%1'
            )}
            commands={['jupyter server extension enable jupyter_dw']}
          />
        </p>
        {check}
      </div>
    );
  }
  if (h.kind === 'mismatch') {
    return (
      <div className="jp-dw-alert" role="alert" data-broken="version-mismatch">
        <strong>
          {trans.__(
            'Version mismatch: the server extension is %1, this panel is %2.',
            h.serverVersion,
            h.frontendVersion
          )}
        </strong>
        <p>
          <Command
            text={trans.__(
              "Both come from the same jupyter_dw package: reinstall it in the server's environment (%1), restart the server and reload this page.",
              '%1'
            )}
            commands={['pip install --force-reinstall jupyter_dw']}
          />
        </p>
        {check}
      </div>
    );
  }
  return (
    <div className="jp-dw-alert" role="alert" data-broken="server-unreachable">
      <strong>{trans.__('The jupyter_dw server extension did not answer: %1', h.message)}</strong>
      <p>
        {trans.__(
          'If the Jupyter server is stopped or restarting, reload this page once it is back (JupyterLab says so when it cannot reach its server). Otherwise its log names the failure.'
        )}
      </p>
      {check}
    </div>
  );
}

/**
 * A translated sentence whose `%1`, `%2`... are commands: each is shown as code (the
 * translation may move them; the commands themselves are never translated). The caller
 * translates with the placeholders as arguments (`trans.__(text, '%1', '%2')`), so they
 * survive the translation's own substitution.
 */
export function Command(props: { text: string; commands: string[] }): JSX.Element {
  const parts = props.text.split(/(%\d)/);
  return (
    <>
      {parts.map((part, i) => {
        const match = /^%(\d)$/.exec(part);
        const command = match ? props.commands[Number(match[1]) - 1] : undefined;
        return command !== undefined ? <code key={i}>{command}</code> : part;
      })}
    </>
  );
}

function connectionText(connection: string): string {
  const trans = dwTrans();
  switch (connection) {
    case 'connecting':
      return trans.__('connecting…');
    case 'live':
      return trans.__('live');
    case 'reconnecting':
      return trans.__('reconnecting…');
    case 'stopped':
      return trans.__('stopped');
    default:
      return '';
  }
}

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
      {connectionText(connection)}
      {socketError && connection !== 'live' ? ` (${socketError.error})` : null}
    </div>
  );
}

/** An error body from the server, with its hint and what to do about it (`remedies.ts`). */
export function ErrorNote(props: {
  error: Pick<ErrorBody, 'error'> & Partial<Pick<ErrorBody, 'reason' | 'hint' | 'code' | 'denied'>>;
}): JSX.Element {
  const { error } = props;
  return (
    <div className="jp-dw-alert" role="alert" data-code={error.code ?? undefined}>
      <strong>{error.error}</strong>
      {error.reason ? <p>{error.reason}</p> : null}
      {error.hint ? <p className="jp-dw-hint">{error.hint}</p> : null}
      <Remedy remedy={remedyFor(error)} />
    </div>
  );
}

/** What to do, with its command shown as code. */
export function Remedy(props: { remedy: IRemedy | null }): JSX.Element | null {
  const { remedy } = props;
  if (remedy === null) {
    return null;
  }
  return (
    <p className="jp-dw-remedy" data-remedy={remedy.kind}>
      {remedy.text}
      {remedy.command ? (
        <>
          {' '}
          <code>{remedy.command}</code>
        </>
      ) : null}
    </p>
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
  const trans = dwTrans();
  const title =
    freshness.state === 'reconnecting'
      ? trans.__('Reconnecting to Kubernetes…')
      : trans.__('Stale');
  return (
    <div
      className={`jp-dw-alert jp-dw-freshness jp-dw-freshness-${freshness.state}`}
      role="status"
      aria-live="polite"
      data-freshness={freshness.state}
    >
      <strong>{since ? trans.__('%1 since %2', title, since) : title}</strong>
      {freshness.reason ? <div>{freshness.reason}</div> : null}
      {affected.length > 1 ? (
        <div className="jp-dw-freshness-affected">
          {trans.__('Affected: %1', affected.join(', '))}
        </div>
      ) : null}
      <div className="jp-dw-muted">{trans.__('What is shown is the last known state.')}</div>
    </div>
  );
}
