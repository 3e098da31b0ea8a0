import * as React from 'react';

import type { Cluster } from '../api';
import { dwTrans } from '../i18n';
import { TERMINAL_JOB_STATES, jobDuration } from '../jobs';
import { DWModel, formatDuration } from '../model';
import { ErrorNote } from './status';
import { colorOf } from '../shared/tones.js';

/** A ready cluster's Ray jobs (id, entrypoint, state, duration), newest first; a click shows
 * the job's log as it streams in, with Stop while it runs. */
export function JobsView(props: { cluster: Cluster; model: DWModel }): JSX.Element | null {
  const { cluster, model } = props;
  const list = model.jobs.list(cluster.name);
  const [, setTick] = React.useState(0);
  const running = (list?.jobs ?? []).some(j => !TERMINAL_JOB_STATES.has(j.status));
  React.useEffect(() => {
    if (!running) {
      return;
    }
    const timer = setInterval(() => setTick(t => t + 1), 1000);
    return () => clearInterval(timer);
  }, [running]);
  // A cluster on a MultiKueue worker whose head this workbench cannot reach: its jobs are
  // there (the card says so), nothing to read from here.
  if (cluster.state !== 'ready' || cluster.dashboard_note) {
    return null;
  }
  const selected = model.jobs.selected;
  const log = model.jobs.log;
  const now = Date.now();
  const trans = dwTrans();
  return (
    <div className="jp-dw-jobs" aria-label={trans.__('Ray jobs of %1', cluster.name)}>
      <div className="jp-dw-jobs-title">{trans.__('Ray jobs')}</div>
      {list?.error ? <ErrorNote error={list.error} /> : null}
      {list === undefined ? <div className="jp-dw-muted">{trans.__('reading jobs…')}</div> : null}
      {list?.jobs && list.jobs.length === 0 ? (
        <div className="jp-dw-muted">{trans.__('No job yet: h.submit_job(...) or %dw job')}</div>
      ) : null}
      <ul className="jp-dw-job-list">
        {(list?.jobs ?? []).map(job => {
          const isSelected =
            selected?.cluster === cluster.name && selected.job === job.submission_id;
          const ms = jobDuration(job, now);
          return (
            <li
              key={job.submission_id}
              className={`jp-dw-job${isSelected ? ' jp-mod-selected' : ''}`}
              data-job={job.submission_id}
              data-job-status={job.status}
            >
              <button
                type="button"
                className="jp-dw-job-row"
                aria-pressed={isSelected}
                title={job.message ?? undefined}
                onClick={() => model.selectJob(cluster.name, isSelected ? null : job.submission_id)}
              >
                <span
                  className={`jp-dw-badge jp-dw-job-${job.status.toLowerCase()}`}
                  style={{ background: colorOf('job', job.status) }}
                >
                  {job.status}
                </span>{' '}
                <code className="jp-dw-job-entrypoint" title={job.entrypoint}>
                  {job.command}
                </code>{' '}
                <span className="jp-dw-muted jp-dw-job-id">{job.submission_id}</span>
                {ms !== null ? (
                  <span className="jp-dw-muted jp-dw-job-duration"> · {formatDuration(ms)}</span>
                ) : null}
              </button>
              {isSelected ? (
                <div className="jp-dw-job-detail">
                  {job.message && job.status === 'FAILED' ? (
                    <div className="jp-dw-job-message" role="alert">
                      {job.message}
                    </div>
                  ) : null}
                  {!TERMINAL_JOB_STATES.has(job.status) ? (
                    <button
                      type="button"
                      className="jp-mod-styled jp-mod-warn jp-dw-button"
                      aria-label={trans.__('Stop job %1', job.submission_id)}
                      onClick={() => void model.stopJob(cluster.name, job.submission_id)}
                    >
                      {trans.__('Stop')}
                    </button>
                  ) : null}
                  {log?.error ? <ErrorNote error={log.error} /> : null}
                  <LogTail text={log?.text ?? null} end={log?.end ?? false} />
                </div>
              ) : null}
            </li>
          );
        })}
      </ul>
    </div>
  );
}

/** The log, kept scrolled to its end while new lines come (unless scrolled up). */
function LogTail(props: { text: string | null; end: boolean }): JSX.Element {
  const ref = React.useRef<HTMLPreElement>(null);
  const atEnd = React.useRef(true);
  React.useLayoutEffect(() => {
    const pre = ref.current;
    if (pre && atEnd.current) {
      pre.scrollTop = pre.scrollHeight;
    }
  }, [props.text]);
  return (
    <pre
      ref={ref}
      className="jp-dw-job-log"
      data-log-end={props.end}
      onScroll={event => {
        const pre = event.currentTarget;
        atEnd.current = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 8;
      }}
    >
      {props.text === null ? dwTrans().__('reading the log…') : props.text}
    </pre>
  );
}
