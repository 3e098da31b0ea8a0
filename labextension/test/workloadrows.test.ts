import { describe, expect, it } from 'vitest';

import { WORKLOADS_SHOWN, firstAndMine } from '../src/workloadrows';
import { workload } from './fixtures';

describe('firstAndMine', () => {
  const names = (n: number) => Array.from({ length: n }, (_, i) => workload(`w${i}`));

  it('shows a short queue whole', () => {
    const all = names(WORKLOADS_SHOWN);
    expect(firstAndMine(all, () => false)).toBe(all);
  });

  it("shows the first ones and every one of mine, in Kueue's order", () => {
    const all = names(40);
    const mine = new Set(['w2', 'w17', 'w39']);
    const shown = firstAndMine(all, w => mine.has(w.name), 5);
    expect(shown.map(w => w.name)).toEqual(['w0', 'w1', 'w2', 'w3', 'w4', 'w17', 'w39']);
  });
});
