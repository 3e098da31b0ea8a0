import { describe, expect, it } from 'vitest';

import { keepEqual, sameJson } from '../src/sharing';

describe('sameJson', () => {
  it('compares JSON values by content', () => {
    expect(sameJson({ a: [1, { b: 'x' }], c: null }, { c: null, a: [1, { b: 'x' }] })).toBe(true);
    expect(sameJson({ a: [1, 2] }, { a: [2, 1] })).toBe(false);
    expect(sameJson({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(sameJson({ a: 1, b: 2 }, { a: 1, c: 2 })).toBe(false);
    expect(sameJson([], {})).toBe(false);
    expect(sameJson(null, {})).toBe(false);
    expect(sameJson('1', 1)).toBe(false);
  });
});

describe('keepEqual', () => {
  it('keeps the old object of an unchanged item and takes the new one of a changed item', () => {
    const old = [
      { name: 'a', pending: 1 },
      { name: 'b', pending: 2 }
    ];
    const fresh = [
      { name: 'b', pending: 3 },
      { name: 'a', pending: 1 },
      { name: 'c', pending: 0 }
    ];
    const kept = keepEqual(old, fresh, q => q.name);
    expect(kept.map(q => q.name)).toEqual(['b', 'a', 'c']);
    expect(kept[1]).toBe(old[0]);
    expect(kept[0]).toBe(fresh[0]);
    expect(kept[0].pending).toBe(3);
    expect(kept[2]).toBe(fresh[2]);
  });
});
