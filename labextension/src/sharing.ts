/**
 * Structural sharing for the events socket's answers: a new answer whose parts equal the old
 * ones keeps the old objects, so memoized rows (React.memo compares props by identity)
 * re-render only what really changed. A `queues` message carries all 200 LocalQueues of a
 * large namespace although one count moved.
 */

/** Whether two JSON values are equal (objects by keys and values, arrays in order). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) {
    return true;
  }
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) {
    return false;
  }
  if (Array.isArray(a) !== Array.isArray(b)) {
    return false;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => sameJson(item, b[i]));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  return (
    keys.length === Object.keys(right).length &&
    keys.every(
      key => Object.prototype.hasOwnProperty.call(right, key) && sameJson(left[key], right[key])
    )
  );
}

/** `fresh`, with each item equal to the `previous` item of the same `key` replaced by it. */
export function keepEqual<T>(previous: readonly T[], fresh: T[], key: (item: T) => string): T[] {
  const before = new Map(previous.map(item => [key(item), item]));
  return fresh.map(item => {
    const old = before.get(key(item));
    return old !== undefined && sameJson(old, item) ? old : item;
  });
}
