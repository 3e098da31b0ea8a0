/**
 * What a cluster uses against what it holds (one bar per resource, "CPU 1.4 of 4 used"), the
 * idle line and Ray's load; and a LocalQueue's line of what my clusters hold and use there.
 * The server computes all of it (core/usage.py, core/holdings.py); the words are
 * usage_bar.js's, shared with the ClusterStatus widget and the QueueBoard.
 */
import * as React from 'react';

import type { ClusterUsage, QueueHolding } from '../api';
import { dwTrans } from '../i18n';
import { holdingText, idleText, rayText, ruleText, usageRows } from '../shared/usage_bar.js';

/** Re-renders once a minute (the idle minutes count up without a request). */
function useMinuteTick(active: boolean): void {
  const [, setTick] = React.useState(0);
  React.useEffect(() => {
    if (!active) {
      return;
    }
    const timer = setInterval(() => setTick(t => t + 1), 60000);
    return () => clearInterval(timer);
  }, [active]);
}

export function UsageView(props: { name: string; usage: ClusterUsage | null }): JSX.Element | null {
  const { usage } = props;
  useMinuteTick(usage?.idle === true);
  if (usage === null) {
    return null; // usage is turned off on this server (usage_interval 0)
  }
  const rows = usageRows(usage);
  const idle = idleText(usage);
  const ray = rayText(usage);
  const rule = ruleText(usage);
  // Nothing held here, and the server says why (a cluster on a MultiKueue worker).
  const elsewhere = rows.length === 0 && usage.reason ? usage.reason : null;
  if (rows.length === 0 && !idle && !ray && !elsewhere) {
    return null;
  }
  const trans = dwTrans();
  return (
    <div className="jp-dw-usage" aria-label={trans.__('Usage of %1', props.name)}>
      {elsewhere ? (
        <div className="jp-dw-muted jp-dw-usage-unknown">
          {trans.__('use unknown: %1', elsewhere)}
        </div>
      ) : null}
      {rows.map(row => (
        <div
          key={row.resource}
          className="jp-dw-usage-row"
          data-resource={row.resource}
          data-held={row.held}
          data-used={row.used ?? ''}
        >
          <span className="jp-dw-usage-text">{row.text}</span>
          {row.unknown ? (
            <span className="jp-dw-muted jp-dw-usage-unknown">
              {' — '}
              {trans.__('use unknown: %1', row.unknown)}
            </span>
          ) : null}
          {row.share !== null ? (
            <div
              className="jp-dw-bar"
              role="meter"
              aria-label={trans.__('%1 used of held by %2', row.label, props.name)}
              aria-valuemin={0}
              aria-valuemax={1}
              aria-valuenow={row.share}
              aria-valuetext={row.text}
            >
              <span className="jp-dw-bar-used" style={{ width: `${row.share * 100}%` }} />
            </div>
          ) : null}
        </div>
      ))}
      {idle ? (
        <div className="jp-dw-idle" data-idle-basis={usage.idle_basis ?? ''}>
          {idle}
        </div>
      ) : null}
      {rule ? (
        <div
          className={`jp-dw-idle-rule${usage.idle_action?.warning ? ' jp-dw-idle-warning' : ''}`}
          role={usage.idle_action?.warning ? 'alert' : undefined}
        >
          {rule}
        </div>
      ) : null}
      {ray ? <div className="jp-dw-muted jp-dw-ray-load">{ray}</div> : null}
    </div>
  );
}

export function HoldingLine(props: {
  queue: string;
  holding: QueueHolding | undefined;
}): JSX.Element | null {
  const text = holdingText(props.queue, props.holding);
  return text ? (
    <div className="jp-dw-holding" data-clusters={props.holding?.clusters}>
      {text}
    </div>
  ) : null;
}
