import { describe, expect, it } from 'vitest';

import { clockTime } from '../src/shared/clock.js';

describe('clockTime', () => {
  it('writes a time of day as the reader locale does, with seconds', () => {
    const iso = '2026-11-26T22:14:47Z';
    const expected = new Date(iso).toLocaleTimeString(undefined, {
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit'
    });
    expect(clockTime(iso)).toBe(expected);
    expect(clockTime(new Date(iso))).toBe(expected);
    expect(expected).toMatch(/47/); // the seconds are there
  });

  it('says so when the time cannot be read', () => {
    expect(clockTime('not a time')).toBe('—');
  });
});
