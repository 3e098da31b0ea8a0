import * as React from 'react';

import type { Cluster } from '../api';
import { ScaleStepper, ScaleStep } from '../scale';
import type { IScaler } from '../scale';
import { barWidths, workersBar } from '../shared/workers_bar.js';
import { colorOf } from '../shared/tones.js';

/** Ready / desired, as before elastic scaling: one segment. */
function FixedWorkers(props: { cluster: Cluster }): JSX.Element {
  const c = props.cluster;
  const desired = c.workers_desired;
  const ready = c.workers_ready;
  return (
    <div className="jp-dw-workers">
      <span>
        workers <strong data-workers-ready={ready}>{ready}</strong>/{desired} ready
        {c.head_ready ? ' · head ready' : ''}
      </span>
      <div
        className="jp-dw-bar"
        role="progressbar"
        aria-label={`Ready workers of ${c.name}`}
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

const SEGMENT_TITLES: Record<string, string> = {
  ready: 'ready',
  starting: 'admitted, starting',
  waiting: 'waiting for quota',
  removing: 'being removed'
};

/**
 * An elastic cluster's size as one bar: ready, admitted (starting), waiting for quota and
 * being removed; who asked for the change in flight, Kueue's reason and the slice's position.
 */
function ElasticWorkers(props: { cluster: Cluster; mine: boolean }): JSX.Element {
  const c = props.cluster;
  const bar = workersBar(c, props.mine);
  const widths = barWidths(bar);
  const kinds = ['ready', 'starting', 'waiting', 'removing'] as const;
  return (
    <div
      className="jp-dw-workers jp-dw-elastic"
      data-elastic="true"
      data-scale={c.scale?.state ?? 'none'}
    >
      <span className="jp-dw-workers-summary" data-workers-ready={c.workers_ready}>
        {bar.summary}
        {c.head_ready ? ' · head ready' : ''}
      </span>
      <div
        className="jp-dw-bar jp-dw-bar-elastic"
        role="progressbar"
        aria-label={`Workers of ${c.name}`}
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
              title={`${bar.segments[kind]} ${SEGMENT_TITLES[kind]}`}
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
  switch (step.kind) {
    case 'idle':
      return null;
    case 'checking':
      return (
        <div className="jp-dw-scale-proposal jp-dw-muted" data-step="checking">
          {step.workers} workers: checking…
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
              aria-label={`Scale ${name} to ${step.workers} workers`}
              onClick={() => void stepper.confirm()}
            >
              Scale to {step.workers}
            </button>
            <button
              type="button"
              className="jp-mod-styled jp-dw-button"
              onClick={() => stepper.cancel()}
            >
              Cancel
            </button>
          </div>
        </div>
      );
    }
    case 'applying':
      return (
        <div className="jp-dw-scale-proposal jp-dw-muted" data-step="applying">
          {step.workers === null
            ? 'Giving the size back to the Ray autoscaler…'
            : `Scaling to ${step.workers} workers…`}
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
  return (
    <div className="jp-dw-scale-box">
      <div
        className="jp-dw-scale"
        role="group"
        aria-label={`Scale ${c.name}`}
        data-step={step.kind}
      >
        <span>scale</span>
        <button
          type="button"
          className="jp-mod-styled jp-dw-button jp-dw-step"
          aria-label={`One worker fewer for ${c.name}`}
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
          aria-label={`One worker more for ${c.name}`}
          disabled={busy || target >= stepper.max}
          onClick={() => stepper.increment()}
        >
          +
        </button>
        <span className="jp-dw-muted" title={`from ${stepper.min} to ${stepper.max}`}>
          workers
        </span>
        {c.pinned_workers !== null ? (
          <button
            type="button"
            className="jp-mod-styled jp-dw-button"
            aria-label={`Give the size of ${c.name} back to the Ray autoscaler`}
            title={`The Ray autoscaler sizes it within ${c.min_workers}–${c.max_workers}`}
            disabled={busy}
            onClick={() => void stepper.release()}
          >
            Auto
          </button>
        ) : null}
      </div>
      <StepMessage step={step} stepper={stepper} name={c.name} />
    </div>
  );
}
