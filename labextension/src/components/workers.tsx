import * as React from 'react';

import type { Cluster } from '../api';
import { dwTrans } from '../i18n';
import { ScaleStepper, ScaleStep } from '../scale';
import type { IScaler } from '../scale';
import { barWidths, workersBar } from '../shared/workers_bar.js';
import { colorOf } from '../shared/tones.js';
import { Placed } from './placed';

/** Ready / desired, as before elastic scaling: one segment. */
function FixedWorkers(props: { cluster: Cluster }): JSX.Element {
  const c = props.cluster;
  const desired = c.workers_desired;
  const ready = c.workers_ready;
  const trans = dwTrans();
  return (
    <div className="jp-dw-workers">
      <span>
        <Placed
          text={trans.__('workers %1/%2 ready', '%1', '%2')}
          parts={[
            <strong key="ready" data-workers-ready={ready}>
              {ready}
            </strong>,
            desired
          ]}
        />
        {c.head_ready ? ` · ${trans.__('head ready')}` : ''}
      </span>
      <div
        className="jp-dw-bar"
        role="progressbar"
        aria-label={trans.__('Ready workers of %1', c.name)}
        aria-valuemin={0}
        aria-valuemax={desired || 1}
        aria-valuenow={ready}
      >
        <span
          className="jp-dw-bar-ready"
          style={{ width: `${desired > 0 ? Math.min(100, (ready / desired) * 100) : 0}%` }}
        />
      </div>
    </div>
  );
}

/** A segment's title: how many workers are in it, and what they do. */
function segmentTitle(kind: 'ready' | 'starting' | 'waiting' | 'removing', count: number): string {
  const trans = dwTrans();
  // The same words for one and many in English; other languages may need plural forms.
  switch (kind) {
    case 'ready':
      return trans._n('%1 ready', '%1 ready', count);
    case 'starting':
      return trans._n('%1 admitted, starting', '%1 admitted, starting', count);
    case 'waiting':
      return trans._n('%1 waiting for quota', '%1 waiting for quota', count);
    case 'removing':
      return trans._n('%1 being removed', '%1 being removed', count);
  }
}

/**
 * An elastic cluster's size as one bar: ready, admitted (starting), waiting for quota and
 * being removed; who asked for the change in flight, Kueue's reason and the slice's position.
 */
function ElasticWorkers(props: { cluster: Cluster; mine: boolean }): JSX.Element {
  const c = props.cluster;
  const bar = workersBar(c, props.mine);
  const widths = barWidths(bar);
  const kinds = ['ready', 'starting', 'waiting', 'removing'] as const;
  const trans = dwTrans();
  return (
    <div
      className="jp-dw-workers jp-dw-elastic"
      data-elastic="true"
      data-scale={c.scale?.state ?? 'none'}
    >
      <span className="jp-dw-workers-summary" data-workers-ready={c.workers_ready}>
        {bar.summary}
        {c.head_ready ? ` · ${trans.__('head ready')}` : ''}
      </span>
      <div
        className="jp-dw-bar jp-dw-bar-elastic"
        role="progressbar"
        aria-label={trans.__('Workers of %1', c.name)}
        aria-valuemin={0}
        aria-valuemax={Math.max(1, bar.total)}
        aria-valuenow={bar.segments.ready}
        aria-valuetext={bar.summary}
      >
        {kinds.map(kind =>
          bar.segments[kind] > 0 ? (
            <span
              key={kind}
              className={`jp-dw-bar-${kind}`}
              data-segment={kind}
              data-count={bar.segments[kind]}
              title={segmentTitle(kind, bar.segments[kind])}
              style={{ width: `${widths[kind]}%` }}
            />
          ) : null
        )}
      </div>
      {bar.request ? (
        <div className="jp-dw-scale-request" data-requested-by={c.scale?.requested_by}>
          {bar.request}
          {bar.position ? (
            <>
              ,{' '}
              <span
                className="jp-dw-scale-position"
                data-position={c.scale?.position_in_local_queue}
              >
                {bar.position}
              </span>
            </>
          ) : null}
        </div>
      ) : null}
      {bar.pending ? <div className="jp-dw-scale-pending">{bar.pending}</div> : null}
      <div className="jp-dw-muted jp-dw-scale-owner">{bar.owner}</div>
    </div>
  );
}

export function WorkersView(props: { cluster: Cluster; mine: boolean }): JSX.Element {
  return props.cluster.elastic ? (
    <ElasticWorkers cluster={props.cluster} mine={props.mine} />
  ) : (
    <FixedWorkers cluster={props.cluster} />
  );
}

function StepMessage(props: { step: ScaleStep; stepper: ScaleStepper; name: string }) {
  const { step, stepper, name } = props;
  const trans = dwTrans();
  switch (step.kind) {
    case 'idle':
      return null;
    case 'checking':
      return (
        <div className="jp-dw-scale-proposal jp-dw-muted" data-step="checking">
          {trans._n('%1 workers: checking…', '%1 workers: checking…', step.workers)}
        </div>
      );
    case 'proposed': {
      const verdict = step.result.fit?.verdict ?? null;
      return (
        <div className="jp-dw-scale-proposal" data-step="proposed" data-workers={step.workers}>
          {verdict ? (
            <span
              className={`jp-dw-badge jp-dw-verdict-${verdict}`}
              data-verdict={verdict}
              style={{ background: colorOf('verdict', verdict) }}
            >
              {verdict}
            </span>
          ) : null}{' '}
          <span className="jp-dw-scale-fit">{step.text}</span>
          <div className="jp-dw-card-actions">
            <button
              type="button"
              className="jp-mod-styled jp-mod-accept jp-dw-button"
              aria-label={trans._n(
                'Scale %2 to %1 workers',
                'Scale %2 to %1 workers',
                step.workers,
                name
              )}
              onClick={() => void stepper.confirm()}
            >
              {trans.__('Scale to %1', step.workers)}
            </button>
            <button
              type="button"
              className="jp-mod-styled jp-dw-button"
              onClick={() => stepper.cancel()}
            >
              {trans.__('Cancel')}
            </button>
          </div>
        </div>
      );
    }
    case 'applying':
      return (
        <div className="jp-dw-scale-proposal jp-dw-muted" data-step="applying">
          {step.workers === null
            ? trans.__('Giving the size back to the Ray autoscaler…')
            : trans._n('Scaling to %1 workers…', 'Scaling to %1 workers…', step.workers)}
        </div>
      );
    case 'applied':
      return (
        <div className="jp-dw-scale-proposal jp-dw-result" role="status" data-step="applied">
          {step.text}
        </div>
      );
    case 'error':
      return (
        <div
          className="jp-dw-scale-proposal jp-dw-result-error"
          role="alert"
          data-step="error"
          data-code={step.code ?? ''}
        >
          {step.message}
        </div>
      );
  }
}

/** − N + within the cluster's range; a dry run on each step, the change on confirm. */
export function ScaleControl(props: { cluster: Cluster; scaler: IScaler }): JSX.Element {
  const c = props.cluster;
  const stepper = React.useMemo(
    () => new ScaleStepper(props.scaler, c.name),
    [props.scaler, c.name]
  );
  const [step, setStep] = React.useState<ScaleStep>(stepper.step);
  React.useEffect(() => {
    const follow = (_: ScaleStepper, next: ScaleStep) => setStep(next);
    stepper.changed.connect(follow);
    return () => stepper.dispose();
  }, [stepper]);
  stepper.sync(c);
  const target = stepper.target ?? 0;
  const busy = step.kind === 'applying';
  const trans = dwTrans();
  return (
    <div className="jp-dw-scale-box">
      <div
        className="jp-dw-scale"
        role="group"
        aria-label={trans.__('Scale %1', c.name)}
        data-step={step.kind}
      >
        <span>{trans.__('scale')}</span>
        <button
          type="button"
          className="jp-mod-styled jp-dw-button jp-dw-step"
          aria-label={trans.__('One worker fewer for %1', c.name)}
          disabled={busy || target <= stepper.min}
          onClick={() => stepper.decrement()}
        >
          −
        </button>
        <output className="jp-dw-scale-target" data-target={target} aria-live="polite">
          {target}
        </output>
        <button
          type="button"
          className="jp-mod-styled jp-dw-button jp-dw-step"
          aria-label={trans.__('One worker more for %1', c.name)}
          disabled={busy || target >= stepper.max}
          onClick={() => stepper.increment()}
        >
          +
        </button>
        <span className="jp-dw-muted" title={trans.__('from %1 to %2', stepper.min, stepper.max)}>
          {trans.__('workers')}
        </span>
        {c.pinned_workers !== null ? (
          <button
            type="button"
            className="jp-mod-styled jp-dw-button"
            aria-label={trans.__('Give the size of %1 back to the Ray autoscaler', c.name)}
            title={trans.__(
              'The Ray autoscaler sizes it within %1–%2',
              c.min_workers,
              c.max_workers
            )}
            disabled={busy}
            onClick={() => void stepper.release()}
          >
            {trans.__('Auto')}
          </button>
        ) : null}
      </div>
      <StepMessage step={step} stepper={stepper} name={c.name} />
    </div>
  );
}
