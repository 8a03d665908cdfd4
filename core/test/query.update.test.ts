import { describe, expect, it } from 'vitest';
import {
  applyUpdate,
  storable,
  updateInPlace,
  validateUpdate,
  valuesEqual,
} from '../src/store/embedded/query.js';
import type { Update } from '../src/store/port.js';

/** A small deterministic PRNG, so a failure names a reproducible case. */
function rng(seed: number) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(xs: T[]) => xs[Math.floor(next() * xs.length)]!,
  };
}
type R = ReturnType<typeof rng>;

const KEYS = ['a', 'b', 'c', 'x', 'y'];
function value(r: R, depth: number): unknown {
  const k = r.int(depth > 2 ? 6 : 9);
  if (k === 0) return r.int(5) - 2;
  if (k === 1) return r.pick(['', 's', 't', 'u']);
  if (k === 2) return null;
  if (k === 3) return r.next() < 0.5;
  if (k === 4) return r.pick([1.5, 1e308, -1e308, 0]);
  if (k === 5) return r.int(3);
  if (k === 6 || k === 7) {
    const o: Record<string, unknown> = {};
    for (let i = r.int(4); i > 0; i--) o[r.pick(KEYS)] = value(r, depth + 1);
    return o;
  }
  return Array.from({ length: r.int(4) }, () => value(r, depth + 1));
}
const PATHS = ['a', 'b', 'c', 'a.x', 'a.0', 'a.1.x', 'b.y', 'b.y.z', 'c.2', 'x', '_id', '_id.q'];
function update(r: R): Update {
  const u: Record<string, Record<string, unknown>> = {};
  for (let i = 1 + r.int(3); i > 0; i--) {
    const op = r.pick(['$set', '$set', '$unset', '$inc', '$max', '$setOnInsert']);
    const path = r.pick(PATHS);
    const v =
      op === '$unset'
        ? 1
        : op === '$inc'
          ? r.pick([0, 1, -1, 2.5, 1e308, -0])
          : path === '_id' && r.next() < 0.5
            ? 'doc'
            : value(r, path.split('.').length);
    (u[op] ??= {})[path] = v;
  }
  return u as Update;
}

function outcome(fn: () => unknown): { ok: unknown } | { error: string } {
  try {
    return { ok: fn() };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

describe('updateInPlace', () => {
  it('gives applyUpdate + storable + valuesEqual results, errors and field order on 20,000 random documents and updates', () => {
    const r = rng(14);
    let checked = 0;
    let changed = 0;
    let errors = 0;
    for (let n = 0; n < 20_000; n++) {
      const doc = { _id: 'doc', ...(value(r, 1) as object) } as Record<string, unknown>;
      if (typeof doc !== 'object' || Array.isArray(doc)) continue;
      const parsed = () =>
        JSON.parse(JSON.stringify(doc)) as Record<string, unknown> & { _id: string };
      const u = update(r);
      try {
        validateUpdate(u);
      } catch {
        continue;
      }
      const base = parsed();
      const slow = outcome(() => {
        const next = storable(applyUpdate(base, u, false));
        return { next, changed: !valuesEqual(next, base) };
      });
      const mine = parsed();
      const fast = outcome(() => updateInPlace(mine, u));
      const context = JSON.stringify({ doc, u });
      if ('error' in slow) {
        expect(fast, context).toEqual(slow);
        errors++;
        continue;
      }
      expect(fast, context).toEqual({ ok: (slow.ok as { changed: boolean }).changed });
      const next = (slow.ok as { next: unknown }).next;
      // Same values in the same field order (JSON text compares both).
      expect(JSON.stringify(mine), context).toBe(JSON.stringify(next));
      checked++;
      if ((slow.ok as { changed: boolean }).changed) changed++;
    }
    // The generator reaches every outcome often.
    expect(checked).toBeGreaterThan(8000);
    expect(changed).toBeGreaterThan(3000);
    expect(checked - changed).toBeGreaterThan(1000);
    expect(errors).toBeGreaterThan(500);
  });

  it('refuses what storage would not keep with applyUpdate path-naming errors', () => {
    const cases: Array<[Record<string, unknown> & { _id: string }, Update]> = [
      [{ _id: 'd', n: 1e308 }, { $inc: { n: 1e308 } }],
      [{ _id: 'd', a: {} }, { $set: { 'a.when': new Date(0) } }],
      [{ _id: 'd' }, { $max: { 'a.b': Number.NaN } }],
      [{ _id: 'd' }, { $unset: { _id: 1 } }],
    ];
    for (const [doc, u] of cases) {
      const slow = outcome(() => storable(applyUpdate(structuredClone(doc), u, false)));
      expect('error' in slow).toBe(true);
      expect(outcome(() => updateInPlace(structuredClone(doc), u))).toEqual(slow);
    }
  });

  it('returns null and leaves the document alone when a $set or $max operand is undefined', () => {
    const doc = { _id: 'd', a: { b: 1 } };
    expect(updateInPlace(doc, { $set: { 'a.c': undefined, x: 1 } })).toBeNull();
    expect(updateInPlace(doc, { $max: { y: undefined as unknown as number } })).toBeNull();
    expect(doc).toEqual({ _id: 'd', a: { b: 1 } });
  });
});
