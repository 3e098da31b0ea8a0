/**
 * A cluster's or a job's life at a glance: one bar of the server's timeline spans (waiting in the queue,
 * the head, the workers folded into one span, each resize), each as wide as it took, its
 * duration written on it when there is room and always in its title and accessible name, the
 * span under way animated and counting up; what ended the run in words; the milestones, in
 * words and with their times, on expand. The spans and words are the server's
 * (`Cluster.timeline`); widths and labels are `shared/timeline_bar.js`, as the widget's.
 */
import * as React from 'react';

import type { Cluster, Timeline } from '../api';
import { dwTrans } from '../i18n';
import { formatDuration, timeline } from '../model';
import { clockTime, durationText } from '../shared/clock.js';
import { ITimelineBar, timelineBar } from '../shared/timeline_bar.js';
import { toneColor } from '../shared/tones.js';

/** A segment narrower than this share of the bar shows its duration only in its title. */
export const TEXT_SHARE = 0.14;

/** Re-render once a second while `live` (a span under way counts up; no request). */
function useTick(live: boolean): void {
  const [, setTick] = React.useState(0);
  React.useEffect(() => {
    if (!live) {
      return;
    }
    const timer = setInterval(() => setTick(t => t + 1), 1000);
    return () => clearInterval(timer);
  }, [live]);
}

/** The line under the bar: the span under way, what ended the run, or how long it took. */
export function timelineCaption(bar: ITimelineBar): string | null {
  const current = bar.segments.find(s => s.current);
  if (current) {
    return current.label;
  }
  if (bar.ending) {
    return bar.ending;
  }
  // Every span done and timed: how long it took, "0s" included (a cluster whose milestones
  // fell in one second started in 0s; a test bed saw it). A span of unknown length: nothing.
  if (bar.segments.length > 0 && bar.segments.every(s => s.done && s.seconds !== null)) {
    return dwTrans().__('started in %1', durationText(bar.total));
  }
  return null;
}

function Milestones(props: { cluster: Cluster }): JSX.Element | null {
  const steps = timeline(props.cluster);
  if (steps.length === 0) {
    return null;
  }
  const trans = dwTrans();
  return (
    <details className="jp-dw-milestones">
      <summary>{trans._n('%1 milestone', '%1 milestones', steps.length)}</summary>
      <ol aria-label={trans.__('Milestones of %1', props.cluster.name)}>
        {steps.map((step, i) => (
          <li key={`${step.name}-${i}`} data-milestone={step.name}>
            <span className="jp-dw-milestone-name">{step.words}</span>
            {step.time ? (
              <time className="jp-dw-muted" dateTime={step.time}>
                {clockTime(step.time)}
              </time>
            ) : null}
            {step.sincePrevious !== null ? (
              <span className="jp-dw-muted"> +{formatDuration(step.sincePrevious)}</span>
            ) : null}
          </li>
        ))}
      </ol>
    </details>
  );
}

/**
 * A workload's timeline bar (a cluster's, a job's: the server's `timeline`) and its caption;
 * `children` go under it (a cluster's milestones). Nothing before the first span.
 */
export function TimelineBarView(props: {
  name: string;
  timeline: Timeline | null | undefined;
  children?: React.ReactNode;
}): JSX.Element | null {
  const t = props.timeline;
  const live = Boolean(t?.spans.some(s => s.current));
  useTick(live);
  const bar = timelineBar(t, new Date());
  if (bar.segments.length === 0 && !props.children) {
    return null;
  }
  const caption = timelineCaption(bar);
  return (
    <div className="jp-dw-timeline" data-ending={t?.ending?.name ?? ''}>
      {bar.segments.length > 0 ? (
        <ol className="jp-dw-timeline-bar" aria-label={dwTrans().__('Timeline of %1', props.name)}>
          {bar.segments.map(s => (
            <li
              key={s.step}
              className={`jp-dw-timeline-segment${s.current ? ' jp-dw-timeline-current' : ''}`}
              data-step={s.step}
              data-tone={s.tone}
              data-done={s.done ? 'true' : 'false'}
              data-current={s.current ? 'true' : 'false'}
              data-seconds={s.seconds === null ? '' : String(Math.round(s.seconds))}
              style={{ flexGrow: s.width, backgroundColor: toneColor(s.tone) }}
              title={s.label}
              aria-label={s.label}
            >
              {s.width >= TEXT_SHARE && s.seconds !== null ? (
                <span className="jp-dw-timeline-text" aria-hidden="true">
                  {durationText(s.seconds)}
                </span>
              ) : null}
            </li>
          ))}
        </ol>
      ) : null}
      {caption ? (
        <div
          className={`jp-dw-timeline-caption${bar.ending ? ' jp-dw-timeline-ending' : ''}`}
          data-caption={bar.ending ? 'ending' : live ? 'current' : 'total'}
        >
          {caption}
        </div>
      ) : null}
      {props.children}
    </div>
  );
}

/** The cluster's timeline bar and, on expand, its milestones; nothing before the first. */
export function TimelineView(props: { cluster: Cluster }): JSX.Element | null {
  const c = props.cluster;
  const hasMilestones = (c.milestones ?? []).length > 0;
  return (
    <TimelineBarView name={c.name} timeline={c.timeline}>
      {hasMilestones ? <Milestones cluster={c} /> : null}
    </TimelineBarView>
  );
}
