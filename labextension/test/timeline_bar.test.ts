import { describe, expect, it } from 'vitest';

import { durationText } from '../src/shared/clock.js';
import { MIN_SHARE, spanTone, timelineBar } from '../src/shared/timeline_bar.js';

const span = (step: string, seconds: number | null, extra: object = {}) => ({
  step,
  words: step,
  start: '2026-11-27T10:00:00Z',
  end: null,
  seconds,
  done: seconds !== null,
  current: false,
  detail: null,
  ...extra
});

describe('timelineBar', () => {
  it('gives each span a width by its duration, and words with the duration', () => {
    const bar = timelineBar({
      spans: [span('queue', 40), span('head', 12), span('workers', 28, { detail: '4/4 workers' })],
      ending: null
    });
    expect(bar.total).toBe(80);
    expect(bar.segments.map(s => s.label)).toEqual([
      'queue 40s',
      'head 12s',
      'workers (4/4 workers) 28s'
    ]);
    expect(bar.segments[0].width).toBeCloseTo(0.5);
    expect(bar.segments[0].color).toContain('--jp-warn-color1'); // waiting
    expect(bar.segments[1].color).toContain('--jp-success-color1'); // a start-up done
    expect(bar.segments.reduce((sum, s) => sum + s.width, 0)).toBeCloseTo(1);
  });

  it('counts the span under way up to now', () => {
    const now = new Date('2026-11-27T10:02:05Z');
    const bar = timelineBar({ spans: [span('queue', null, { current: true })], ending: null }, now);
    expect(bar.segments[0].seconds).toBe(125);
    expect(bar.segments[0].label).toBe('queue 2m 5s so far');
  });

  it('keeps a short or unknown span visible', () => {
    const bar = timelineBar({
      spans: [span('queue', 3600), span('head', 1), span('x', null)],
      ending: null
    });
    const [, head, unknown] = bar.segments;
    expect(head.width).toBeGreaterThan(MIN_SHARE * 0.8);
    expect(unknown.seconds).toBeNull();
    expect(unknown.label).toBe('x');
    expect(unknown.width).toBeCloseTo(head.width);
  });

  it('says what ended the run', () => {
    const bar = timelineBar({
      spans: [span('queue', 600)],
      ending: { name: 'Stopped', words: 'stopped', time: null }
    });
    expect(bar.ending).toBe('stopped');
  });

  it('draws a wait in the waiting tone, a start-up by how far it got', () => {
    const bar = timelineBar({
      spans: [
        span('queue', 40),
        span('head', 12),
        span('workers', null, { current: true }),
        span('resize-queue:6', null, { done: false })
      ],
      ending: null
    });
    expect(bar.segments.map(s => s.tone)).toEqual(['wait', 'ok', 'progress', 'wait']);
    expect(spanTone({ step: 'head', done: false, current: false })).toBe('neutral'); // cut short
    expect(spanTone({ step: 'resize-workers:6', done: true })).toBe('ok');
  });

  it('draws nothing for no timeline', () => {
    expect(timelineBar(null)).toEqual({ segments: [], total: 0, ending: null });
  });
});

describe('durationText', () => {
  it('writes seconds, minutes, hours short', () => {
    expect([durationText(42), durationText(185), durationText(7800)]).toEqual([
      '42s',
      '3m 5s',
      '2h 10m'
    ]);
  });
});
