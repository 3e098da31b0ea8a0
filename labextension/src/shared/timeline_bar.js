// A cluster's life as one bar: the REST `timeline`'s spans (the server makes them from the
// milestones, domain/timeline.py), each with its width, its words and how long it took or
// has taken so far. Pure: the spans in, numbers and words out; only the span under way is
// measured here, against `now`, so that its time counts up between messages.
//
// One source for both surfaces: the sidebar imports this file (types in timeline_bar.d.ts,
// tests in labextension/test/), the ClusterStatus widget's ESM includes it after clock.js.
import { clockTime, durationText } from "./clock.js";
import { toneColor, toneOf } from "./tones.js";

/** A span's share of the bar never falls below this: a 1 s head start stays visible. */
export const MIN_SHARE = 0.08;

/**
 * The tone (tones.js) a span is drawn in: a wait for Kueue (tones.js's `span` table says
 * which steps are waits: the queue, capacity, a resize's queue) in the waiting tone, a
 * start-up under way in progress, one done in ok, one the run's ending cut short (neither
 * done nor under way) neutral. The words and the duration on it say the same without the
 * colour. (display.py's `span_tone` draws the kernel's HTML by this rule too.)
 */
export function spanTone(span) {
  if (toneOf("span", String(span.step).split(":")[0]) === "wait") return "wait";
  if (span.current) return "progress";
  return span.done ? "ok" : "neutral";
}

function seconds(span, now) {
  if (span.seconds !== null && span.seconds !== undefined) return span.seconds;
  if (!span.current || !span.start) return null;
  const start = new Date(span.start).getTime();
  return Number.isNaN(start) ? null : Math.max(0, (now.getTime() - start) / 1000);
}

/**
 * The bar of `timeline` (`{spans, ending}`) at `now`: `segments` (`step`, `words`, `detail`,
 * `seconds` or null, `current`, `done`, `width` as a fraction of the bar, `tone` and its CSS
 * `color`, `label`: its words and duration), `total` seconds known and `ending` in words
 * with its time (or null).
 * Widths follow the durations; a span of unknown length gets the minimum share.
 */
export function timelineBar(timeline, now = new Date()) {
  const spans = (timeline && timeline.spans) || [];
  const measured = spans.map((span) => seconds(span, now));
  const total = measured.reduce((sum, s) => sum + (s || 0), 0);
  const raw = measured.map((s) => (total > 0 && s ? s / total : 0));
  const floored = raw.map((share) => Math.max(share, MIN_SHARE));
  const scale = floored.reduce((sum, share) => sum + share, 0) || 1;
  const segments = spans.map((span, i) => {
    const s = measured[i];
    const time = s === null ? "" : ` ${durationText(s)}`;
    const detail = span.detail ? ` (${span.detail})` : "";
    return {
      step: span.step,
      words: span.words,
      detail: span.detail || null,
      seconds: s,
      current: !!span.current,
      done: !!span.done,
      width: floored[i] / scale,
      tone: spanTone(span),
      color: toneColor(spanTone(span)),
      label: `${span.words}${detail}${time}${span.current ? " so far" : ""}`,
    };
  });
  const end = timeline && timeline.ending;
  const ending = end ? `${end.words}${end.time ? ` at ${clockTime(end.time)}` : ""}` : null;
  return { segments, total, ending };
}
