import * as React from 'react';

import { DWRequestError } from '../api';
import type { Cluster } from '../api';
import { dwTrans } from '../i18n';
import { DWModel, dashboardOffHint, formatDuration, quotaHeldFor } from '../model';
import { canScale } from '../shared/workers_bar.js';
import type { IScaler } from '../scale';
import { CardHead, CardReason, DeleteButton, PlacementLine, QueuePosition } from './card';
import { JobsView } from './jobs';
import { Placed } from './placed';
import { ErrorNote } from './status';
import { TimelineView } from './timeline';
import { UsageView } from './usage';
import { ScaleControl, WorkersView } from './workers';

/** What a card's buttons do (the plugin provides them: JupyterLab tabs, notebooks, dialogs). */
export interface IClusterActions {
  openDashboard(cluster: Cluster): void;
  insertConnection(cluster: Cluster): Promise<void>;
  remove(cluster: Cluster): Promise<void>;
}

/** A duration since `since` that counts up once a second (a local timer, no request). */
function Elapsed(props: { since: () => number | null }): JSX.Element | null {
  const [, setTick] = React.useState(0);
  React.useEffect(() => {
    const timer = setInterval(() => setTick(t => t + 1), 1000);
    return () => clearInterval(timer);
  }, []);
  const ms = props.since();
  return ms === null ? null : <>{formatDuration(ms)}</>;
}

/** "stopped by <who> at <time>", or the rule that stopped it with its figures. */
export function stoppedWords(stopped: NonNullable<Cluster['stopped']>): string {
  const trans = dwTrans();
  const reason: Record<string, unknown> = stopped.reason;
  const by = typeof reason.by === 'string' ? reason.by : null;
  let who: string;
  if (by && by !== 'person') {
    // The rule's name and figures are the server's (`idle-rule`, `idle_seconds 1800`).
    const figures = Object.entries(reason)
      .filter(([key]) => key !== 'by')
      .map(([key, value]) => `${key} ${String(value)}`)
      .join(', ');
    who = figures ? trans.__('the %1 (%2)', by, figures) : trans.__('the %1', by);
  } else {
    who = stopped.by ?? trans.__('someone');
  }
  return stopped.at
    ? trans.__('stopped by %1 at %2', who, new Date(stopped.at).toLocaleString())
    : trans.__('stopped by %1', who);
}

/**
 * Stop (an admitted cluster: its pods go, its quota is freed, the cluster is kept) or Resume
 * (a stopped one: queued again); a refusal is shown under the buttons.
 */
function StopResumeButton(props: { cluster: Cluster; model: DWModel }): JSX.Element | null {
  const c = props.cluster;
  const [busy, setBusy] = React.useState(false);
  const [error, setError] = React.useState<DWRequestError | Error | null>(null);
  const action =
    c.state === 'stopped' ? 'resume' : c.admitted && c.state !== 'deleting' ? 'stop' : null;
  if (action === null) {
    return error ? <ErrorNote error={{ error: error.message }} /> : null;
  }
  const click = async (): Promise<void> => {
    setBusy(true);
    setError(null);
    try {
      await props.model.stopOrResume(c.name, action);
    } catch (err) {
      setError(err instanceof Error ? err : new Error(String(err)));
    } finally {
      setBusy(false);
    }
  };
  const body = error instanceof DWRequestError ? error.body : null;
  const trans = dwTrans();
  return (
    <>
      <button
        type="button"
        className={`jp-mod-styled jp-dw-button jp-dw-${action}`}
        aria-label={action === 'stop' ? trans.__('Stop %1', c.name) : trans.__('Resume %1', c.name)}
        title={
          action === 'stop'
            ? trans.__('Free its quota and remove its pods; the cluster and its spec are kept')
            : trans.__('Queue it again, at the size it had')
        }
        disabled={busy}
        onClick={() => void click()}
      >
        {action === 'stop' ? trans.__('Stop') : trans.__('Resume')}
      </button>
      {error ? <ErrorNote error={body ?? { error: error.message }} /> : null}
    </>
  );
}

function ClusterCard(props: {
  cluster: Cluster;
  actions: IClusterActions;
  me: string | null;
  scaler: IScaler;
  model: DWModel;
}): JSX.Element {
  const c = props.cluster;
  const { actions } = props;
  const titleId = `jp-dw-cluster-${c.name}`;
  const queued = c.state === 'queued';
  // MultiKueue sent it to a worker: its head's Ray Client address is that cluster's.
  const onWorker = c.placement?.worker_cluster ?? null;
  const trans = dwTrans();
  return (
    <li className="jp-dw-card" data-cluster={c.name} data-state={c.state} aria-labelledby={titleId}>
      <CardHead name={c.name} titleId={titleId} state={c.state} freshness={c.freshness} />
      {c.ray_auth?.warning ? (
        <div className="jp-dw-auth-warning" role="alert" data-ray-auth={c.ray_auth.mode}>
          ⚠ {c.ray_auth.warning}
        </div>
      ) : null}
      <div className="jp-dw-muted jp-dw-card-queue">
        {trans.__('queue %1', c.queue ?? '?')}
        {c.owner ? (
          <> · {trans.__('by %1', c.owner === props.me ? trans.__('you') : c.owner)}</>
        ) : null}
      </div>
      <PlacementLine placement={c.placement} />
      <CardReason reason={c.reason} message={c.message} summary={c.summary} always={queued} />
      {c.state === 'stopped' && c.stopped ? (
        <div className="jp-dw-stopped" data-stopped-by={c.stopped.reason.by ?? ''}>
          {stoppedWords(c.stopped)}
        </div>
      ) : null}
      <QueuePosition
        queued={queued}
        queue={c.queue}
        position={c.position_in_local_queue}
        positionInClusterQueue={c.position_in_cluster_queue}
        clusterQueue={c.cluster_queue}
      />
      {c.admission_checks.length > 0 ? (
        <ul className="jp-dw-checks" aria-label={trans.__('Admission checks of %1', c.name)}>
          {c.admission_checks.map(check => (
            <li key={check.name} data-check={check.name} data-check-state={check.state}>
              <Placed
                text={trans.__('admission check %1: %2', '%1', '%2')}
                parts={[
                  <strong key="name">{check.name}</strong>,
                  <span key="state" className={`jp-dw-check-${check.state.toLowerCase()}`}>
                    {check.state}
                  </span>
                ]}
              />
              {check.message ? <span className="jp-dw-muted"> — {check.message}</span> : null}
            </li>
          ))}
        </ul>
      ) : null}
      <WorkersView cluster={c} mine={c.owner !== null && c.owner === props.me} />
      <UsageView name={c.name} usage={c.usage} />
      {canScale(c) ? <ScaleControl cluster={c} scaler={props.scaler} /> : null}
      {quotaHeldFor(c, Date.now()) !== null ? (
        <div className="jp-dw-held">
          <Placed
            text={trans.__('holding quota for %1', '%1')}
            parts={[<Elapsed key="held" since={() => quotaHeldFor(c, Date.now())} />]}
          />
        </div>
      ) : null}
      <TimelineView cluster={c} />
      <JobsView cluster={c} model={props.model} />
      {c.dashboard_note ? (
        <div className="jp-dw-muted jp-dw-dashboard-note">{c.dashboard_note}</div>
      ) : null}
      <div className="jp-dw-card-actions">
        <button
          type="button"
          className="jp-mod-styled jp-dw-button"
          aria-label={trans.__('Open the Ray dashboard of %1', c.name)}
          disabled={c.dashboard_url === null}
          title={c.dashboard_url === null ? (c.dashboard_note ?? dashboardOffHint(c)) : undefined}
          onClick={() => actions.openDashboard(c)}
        >
          {trans.__('Dashboard')}
        </button>
        <button
          type="button"
          className="jp-mod-styled jp-dw-button"
          aria-label={trans.__('Insert ray.init code for %1 into the active notebook', c.name)}
          disabled={onWorker !== null}
          title={
            onWorker !== null
              ? trans.__(
                  'Runs on worker cluster %1: Ray Client reaches its head only from there',
                  onWorker
                )
              : undefined
          }
          onClick={() => void actions.insertConnection(c)}
        >
          {trans.__('Insert ray.init')}
        </button>
        <StopResumeButton cluster={c} model={props.model} />
        <DeleteButton
          name={c.name}
          disabled={c.state === 'deleting'}
          onDelete={() => void actions.remove(c)}
        />
      </div>
    </li>
  );
}

export function ClustersSection(props: {
  model: DWModel;
  scope: 'mine' | 'all';
  actions: IClusterActions;
}): JSX.Element {
  const { model, scope, actions } = props;
  const clusters = model.visibleClusters(scope);
  const trans = dwTrans();
  return (
    <section className="jp-dw-section" aria-labelledby="jp-dw-clusters-title">
      <h3 id="jp-dw-clusters-title" className="jp-dw-section-title">
        {scope === 'mine' ? trans.__('My Ray clusters') : trans.__('Ray clusters')}
      </h3>
      {model.clustersError ? <ErrorNote error={model.clustersError} /> : null}
      {clusters.length === 0 && !model.clustersError ? (
        <p className="jp-dw-muted">{trans.__('No Ray cluster yet: create one below.')}</p>
      ) : null}
      <ul className="jp-dw-cards">
        {clusters.map(c => (
          <ClusterCard
            key={c.name}
            cluster={c}
            actions={actions}
            me={model.username}
            scaler={model}
            model={model}
          />
        ))}
      </ul>
    </section>
  );
}
