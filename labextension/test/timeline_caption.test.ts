import { describe, expect, it } from 'vitest';

import { timelineCaption } from '../src/components/timeline';
import { timelineBar } from '../src/shared/timeline_bar.js';

const span = (step: string, seconds: number | null) => ({
  step,
  words: step,
  start: '2026-11-27T10:00:00Z',
  end: null,
  seconds,
  done: true,
  current: false,
  detail: null
});

describe('timelineCaption', () => {
  it('says how long a start took once every span is done and timed', () => {
    const bar = timelineBar({ spans: [span('queue', 40), span('head', 12)], ending: null });
    expect(timelineCaption(bar)).toBe('started in 52s');
  });

  it('says 0s for a start whose milestones fell in one second', () => {
    const bar = timelineBar({ spans: [span('queue', 0), span('head', 0)], ending: null });
    expect(timelineCaption(bar)).toBe('started in 0s');
  });

  it('says nothing of a total it does not know', () => {
    const bar = timelineBar({ spans: [span('queue', 3), span('head', null)], ending: null });
    expect(timelineCaption(bar)).toBeNull();
  });
});
