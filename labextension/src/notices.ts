/**
 * What to tell a person about a change of one of their clusters or jobs, as a JupyterLab
 * notification: pure decisions from the record before and after a change (the model's
 * `transitions`), never from a timer. One notice per event, each with a key that names the
 * event (a cluster's `ready` of one admission), so a repeat of the same state is not told
 * twice; `RecentActions` holds what the user just did in this tab, which is not news to them.
 * notifier.ts shows the notices; the settings say which kinds (`NOTICE_KINDS`).
 */
import type { Cluster, RayJob } from './api';
import { dwTrans } from './i18n';
import { idleWarning } from './idlewarning';
import type { IKindJob } from './podjobs';
import { durationText } from './shared/clock.js';

/** The kinds of notice, each a setting (`notifications` in schema/plugin.json). */
export type NoticeKind =
  'admitted' | 'ready' | 'preempted' | 'failed' | 'finished' | 'scaled' | 'idle' | 'stopped';

/**
 * Each kind's default: on for what a person waits for or must act on; off for `stopped`
 * (told only when someone else or the idle rule stopped it, which its warning announced).
 */
export const NOTICE_KINDS: Readonly<Record<NoticeKind, boolean>> = {
  admitted: true,
  ready: true,
  preempted: true,
  failed: true,
  finished: true,
  scaled: true,
  idle: true,
  stopped: false
};

/** What a notice's button does. */
export type NoticeAction = 'dashboard' | 'resume' | 'log' | 'show';

export interface INotice {
  kind: NoticeKind;
  /** `cluster`, a workload kind's plural (`rayjobs`), or `job` (a Ray job on a cluster). */
  subject: string;
  /** The cluster's or job's name; for a Ray job, its cluster's. */
  name: string;
  /** A Ray job's submission id. */
  job?: string;
  level: 'success' | 'info' | 'warning' | 'error';
  /** At most `MAX_TEXT` characters (JupyterLab's limit); the card has the whole words. */
  text: string;
  actions: NoticeAction[];
  /** Names the event: the same key is told once. */
  key: string;
}

/** A change the model applied: one record before and after (undefined: unknown, null: gone). */
export type Transition =
  | {
      subject: 'cluster';
      name: string;
      before: Cluster | undefined;
      after: Cluster | null;
      /** The milestones crossed (the `cluster` message's, and those new in `after`). */
      crossed: readonly string[];
    }
  | {
      subject: 'kind';
      /** The kind's plural (`rayjobs`) and its name (`RayJob`). */
      plural: string;
      kind: string;
      name: string;
      before: IKindJob | undefined;
      after: IKindJob | null;
    }
  | {
      subject: 'job';
      cluster: string;
      before: readonly RayJob[] | null | undefined;
      after: readonly RayJob[] | null;
    };

/** JupyterLab cuts a notification's message at 140 characters. */
export const MAX_TEXT = 140;

/** A wait this long (or Kueue's words on why, or a queue position) is a wait worth telling. */
export const WAITED_SECONDS = 10;

const WAITING = new Set(['queued', 'waiting-for-capacity']);
const HOLDS = new Set(['admitted', 'starting', 'ready', 'running']);
const PUSHED_OUT = new Set(['preempted', 'evicted']);
const FAILED = new Set(['failed', 'rejected', 'stalled']);
const FINISHED = new Set(['succeeded', 'finished']);
const RAY_LIVE = new Set(['PENDING', 'RUNNING']);

/** `text` cut to `MAX_TEXT` characters with an ellipsis. */
export function short(text: string): string {
  return text.length <= MAX_TEXT ? text : `${text.slice(0, MAX_TEXT - 1)}…`;
}

/** Kueue's or the controller's words on a record: the summary, else the message or reason. */
function why(record: { summary?: string | null; message: string | null; reason: string | null }) {
  return record.summary || record.message || record.reason || null;
}

function withWhy(text: string, words: string | null): string {
  return short(words ? dwTrans().__('%1: %2', text, words) : text);
}

/**
 * A cluster's (`kind` null) or a job's end in words, by its state: `preempted`, `evicted`
 * (pushed out), `failed`, `rejected`, `stalled`, `succeeded`, `finished`. A state without
 * words of its own is named as the server names it.
 */
function endWords(kind: string | null, name: string, state: string): string {
  const trans = dwTrans();
  if (kind === null) {
    switch (state) {
      case 'preempted':
        return trans.__('Ray cluster %1 was preempted', name);
      case 'evicted':
        return trans.__('Ray cluster %1 was evicted', name);
      case 'failed':
        return trans.__('Ray cluster %1 failed', name);
      case 'rejected':
        return trans.__('Ray cluster %1 rejected', name);
      case 'stalled':
        return trans.__('Ray cluster %1 is stalled', name);
      default:
        return trans.__('Ray cluster %1 %2', name, state);
    }
  }
  switch (state) {
    case 'preempted':
      return trans.__('%1 %2 was preempted', kind, name);
    case 'evicted':
      return trans.__('%1 %2 was evicted', kind, name);
    case 'failed':
      return trans.__('%1 %2 failed', kind, name);
    case 'rejected':
      return trans.__('%1 %2 rejected', kind, name);
    case 'stalled':
      return trans.__('%1 %2 stalled', kind, name);
    case 'succeeded':
      return trans.__('%1 %2 succeeded', kind, name);
    case 'finished':
      return trans.__('%1 %2 finished', kind, name);
    default:
      return trans.__('%1 %2 %3', kind, name, state);
  }
}

/**
 * How long a cluster has waited in the queue, when the wait `before` was in is its first
 * (the timeline's `queue` span, under way in `before`, ended or counted up in `after`); null
 * for a later wait (a requeue after a preemption or a resume: the span is the first's).
 */
function firstWait(before: Cluster, after: Cluster, now: number): number | null {
  const waiting = before.timeline?.spans.find(s => s.step === 'queue');
  if (!waiting?.current) {
    return null;
  }
  const span = after.timeline?.spans.find(s => s.step === 'queue');
  if (span?.seconds !== null && span?.seconds !== undefined) {
    return span.seconds;
  }
  const start = Date.parse(waiting.start ?? '');
  return Number.isNaN(start) ? null : Math.max(0, (now - start) / 1000);
}

/**
 * Whether a wait is worth telling the end of: Kueue said why it waits (its `summary`), or it
 * waited `WAITED_SECONDS` or more; a workload admitted at once is no news.
 */
function waited(before: { summary?: string | null }, seconds: number | null): boolean {
  return Boolean(before.summary) || (seconds !== null && seconds >= WAITED_SECONDS);
}

function clusterNotices(t: Extract<Transition, { subject: 'cluster' }>, now: number): INotice[] {
  const { name, before, after } = t;
  const notices: INotice[] = [];
  const base = { subject: 'cluster', name };
  const idle = idleWarning(before, after);
  if (idle !== null && after) {
    const at = after.usage?.idle_action?.at ?? '';
    notices.push({
      ...base,
      kind: 'idle',
      level: 'warning',
      text: short(idle),
      actions: ['show'],
      key: `cluster/${name}/idle/${at}`
    });
  }
  if (!before || !after) {
    return notices;
  }
  const trans = dwTrans();
  const s0 = before.state;
  const s1 = after.state;
  const run = after.admitted_at ?? '';
  if (s1 !== s0 && s1 === 'ready') {
    notices.push({
      ...base,
      kind: 'ready',
      level: 'success',
      text: short(trans.__('Ray cluster %1 is ready', name)),
      actions: after.dashboard_url ? ['dashboard', 'show'] : ['show'],
      key: `cluster/${name}/ready/${run}`
    });
  } else if (WAITING.has(s0) && HOLDS.has(s1)) {
    const seconds = firstWait(before, after, now);
    if (waited(before, seconds)) {
      notices.push({
        ...base,
        kind: 'admitted',
        level: 'success',
        text: short(
          seconds !== null
            ? trans.__('Ray cluster %1 was admitted after waiting %2', name, durationText(seconds))
            : trans.__('Ray cluster %1 was admitted', name)
        ),
        actions: ['show'],
        key: `cluster/${name}/admitted/${run}`
      });
    }
  }
  const ended = t.crossed.find(m => m === 'Preempted' || m === 'Evicted');
  if (s1 !== 'stopped' && s1 !== 'deleting' && ((s1 !== s0 && PUSHED_OUT.has(s1)) || ended)) {
    const what = PUSHED_OUT.has(s1) ? s1 : (ended ?? 'evicted').toLowerCase();
    notices.push({
      ...base,
      kind: 'preempted',
      level: 'warning',
      text: withWhy(endWords(null, name, what), why(after)),
      actions: ['show'],
      key: `cluster/${name}/${what}/${after.timeline?.ending?.time ?? run}`
    });
  }
  if (s1 !== s0 && s1 === 'stopped') {
    const by = after.stopped?.reason.by;
    const who = by && by !== 'person' ? trans.__('the %1', by) : (after.stopped?.by ?? null);
    notices.push({
      ...base,
      kind: 'stopped',
      level: 'warning',
      text: short(
        who
          ? trans.__('Ray cluster %1 was stopped by %2; it holds no quota now', name, who)
          : trans.__('Ray cluster %1 was stopped; it holds no quota now', name)
      ),
      actions: ['resume', 'show'],
      key: `cluster/${name}/stopped/${after.stopped?.at ?? ''}`
    });
  }
  if (s1 !== s0 && FAILED.has(s1)) {
    notices.push({
      ...base,
      kind: 'failed',
      level: 'error',
      text: withWhy(endWords(null, name, s1), why(after)),
      actions: ['show'],
      key: `cluster/${name}/${s1}/${run}`
    });
  }
  for (const milestone of t.crossed) {
    const [step, workers] = milestone.split(':');
    if (step === 'ScaleAdmitted' && workers) {
      const time = after.milestones?.find(m => m.name === milestone)?.time ?? '';
      notices.push({
        ...base,
        kind: 'scaled',
        level: 'info',
        text: short(
          trans.__('Ray cluster %1: the resize to %2 workers was admitted', name, workers)
        ),
        actions: ['show'],
        key: `cluster/${name}/${milestone}/${time}`
      });
    }
  }
  return notices;
}

function kindNotices(t: Extract<Transition, { subject: 'kind' }>, now: number): INotice[] {
  const { before, after, name, plural } = t;
  if (!before || !after || before.state === after.state) {
    return [];
  }
  const s0 = before.state;
  const s1 = after.state;
  const created = (after as { created?: string | null }).created;
  const age = created ? (now - Date.parse(created)) / 1000 : null;
  /** The one notice of this change (a job's notices always offer to show it). */
  const one = (kind: NoticeKind, level: INotice['level'], text: string, key: string) => [
    { subject: plural, name, actions: ['show'] as NoticeAction[], kind, level, text, key }
  ];
  if (WAITING.has(s0) && HOLDS.has(s1) && waited(before, age)) {
    const text = short(dwTrans().__('%1 %2 was admitted', t.kind, name));
    return one('admitted', 'success', text, `${plural}/${name}/admitted`);
  }
  if (FINISHED.has(s1)) {
    return one('finished', 'success', short(endWords(t.kind, name, s1)), `${plural}/${name}/${s1}`);
  }
  if (FAILED.has(s1)) {
    const text = withWhy(endWords(t.kind, name, s1), why(after));
    return one('failed', 'error', text, `${plural}/${name}/${s1}`);
  }
  if (PUSHED_OUT.has(s1)) {
    const text = withWhy(endWords(t.kind, name, s1), why(after));
    return one('preempted', 'warning', text, `${plural}/${name}/${s1}/${created ?? ''}`);
  }
  return [];
}

function rayJobNotices(t: Extract<Transition, { subject: 'job' }>): INotice[] {
  const before = new Map((t.before ?? []).map(j => [j.submission_id, j]));
  const notices: INotice[] = [];
  for (const job of t.after ?? []) {
    const was = before.get(job.submission_id);
    if (!was || !RAY_LIVE.has(was.status) || RAY_LIVE.has(job.status)) {
      continue; // new (its end already known), or no end crossed now
    }
    if (job.status !== 'SUCCEEDED' && job.status !== 'FAILED') {
      continue; // STOPPED: someone asked for it
    }
    const failed = job.status === 'FAILED';
    const text = failed
      ? dwTrans().__('Ray job %1 on %2 failed', job.submission_id, t.cluster)
      : dwTrans().__('Ray job %1 on %2 succeeded', job.submission_id, t.cluster);
    notices.push({
      kind: failed ? 'failed' : 'finished',
      subject: 'job',
      name: t.cluster,
      job: job.submission_id,
      level: failed ? 'error' : 'success',
      text: failed ? withWhy(text, job.message) : short(text),
      actions: ['log'],
      key: `job/${t.cluster}/${job.submission_id}/${job.status}`
    });
  }
  return notices;
}

/** The notices one change makes (`now`: ms since the epoch), in the order they happened. */
export function noticesOf(t: Transition, now: number): INotice[] {
  switch (t.subject) {
    case 'cluster':
      return clusterNotices(t, now);
    case 'kind':
      return kindNotices(t, now);
    case 'job':
      return rayJobNotices(t);
  }
}

/** The milestones `after` reached that `before` had not, and those a message says crossed. */
export function crossedMilestones(
  before: Cluster | undefined,
  after: Cluster | null,
  said: readonly string[] = []
): string[] {
  const known = new Set((before?.milestones ?? []).map(m => m.name));
  const fresh = before ? (after?.milestones ?? []).map(m => m.name).filter(n => !known.has(n)) : [];
  return [...new Set([...said, ...fresh])];
}

/** What a person does in this tab: each makes some notices about that object no news. */
export type UserAction = 'create' | 'delete' | 'stop' | 'resume' | 'scale' | 'stop-job';

const QUIETS: Readonly<Record<UserAction, readonly NoticeKind[] | 'all'>> = {
  create: ['admitted', 'ready'],
  resume: ['admitted', 'ready'],
  delete: 'all',
  stop: ['preempted', 'stopped', 'failed'],
  scale: ['scaled'],
  'stop-job': ['finished', 'failed']
};

/** How long an action in this tab keeps its consequences quiet (ms). */
export const RECENT_MS = 60_000;

/**
 * The user's own actions in this tab, by object and action, for `RECENT_MS`: a notice of
 * what they just did (their Stop, their scale admitted at once, their new cluster ready while
 * they watch it) is not shown.
 */
export class RecentActions {
  constructor(readonly windowMs: number = RECENT_MS) {}

  /** `action` on `name` (a Ray job: `cluster/submission id`) of `subject`, at `now` (ms). */
  note(subject: string, name: string, action: UserAction, now: number): void {
    this._forget(now);
    this._actions.push({ key: `${subject}/${name}`, action, at: now });
  }

  /** Whether `notice` follows from an action of the user in the last `windowMs`. */
  quiets(notice: INotice, now: number): boolean {
    this._forget(now);
    const name = notice.job !== undefined ? `${notice.name}/${notice.job}` : notice.name;
    const key = `${notice.subject}/${name}`;
    return this._actions.some(a => {
      const quiet = QUIETS[a.action];
      return a.key === key && (quiet === 'all' || quiet.includes(notice.kind));
    });
  }

  private _forget(now: number): void {
    this._actions = this._actions.filter(a => now - a.at < this.windowMs);
  }

  private _actions: { key: string; action: UserAction; at: number }[] = [];
}

/** The kinds the `notifications` setting turns on (absent kinds: their defaults). */
export function enabledKinds(setting: unknown): Record<NoticeKind, boolean> {
  const chosen = (setting && typeof setting === 'object' ? setting : {}) as Record<string, unknown>;
  const kinds = { ...NOTICE_KINDS };
  for (const kind of Object.keys(kinds) as NoticeKind[]) {
    if (typeof chosen[kind] === 'boolean') {
      kinds[kind] = chosen[kind] as boolean;
    }
  }
  return kinds;
}
