import { describe, expect, it } from 'vitest';
import { ulid } from '../src/ids.js';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';

/** The 80-bit random part read back from its 16 base32 characters. */
const randomPart = (id: string): bigint =>
  [...id.slice(10)].reduce((acc, ch) => (acc << 5n) | BigInt(ALPHABET.indexOf(ch)), 0n);
const timePart = (id: string): number =>
  [...id.slice(0, 10)].reduce((acc, ch) => acc * 32 + ALPHABET.indexOf(ch), 0);

describe('ulid', () => {
  it('is 26 Crockford base32 characters: the millisecond time, then 80 random bits', () => {
    const t = Date.UTC(2030, 0, 1);
    const id = ulid(t);
    expect(id).toMatch(/^[0-9a-hjkmnp-tv-z]{26}$/);
    expect(timePart(id)).toBe(t);
    // Random ids of later milliseconds differ and use the whole 80-bit range over many draws.
    const parts = Array.from({ length: 2000 }, (_, i) => randomPart(ulid(t + 1 + i)));
    expect(new Set(parts).size).toBe(2000);
    expect(parts.some((p) => p >= 1n << 79n)).toBe(true);
    expect(parts.some((p) => p < 1n << 79n)).toBe(true);
  });

  it('within one millisecond, and when the clock steps back, counts up from the previous id', () => {
    const t = Date.UTC(2031, 5, 1);
    const ids = [ulid(t), ulid(t), ulid(t - 5), ulid(t)];
    for (let i = 1; i < ids.length; i++) {
      expect(ids[i]! > ids[i - 1]!).toBe(true);
      expect(timePart(ids[i]!)).toBe(t);
      expect(randomPart(ids[i]!)).toBe(randomPart(ids[i - 1]!) + 1n);
    }
  });

  it('sorts in creation order across thousands of ids, across milliseconds', () => {
    const t = Date.UTC(2032, 0, 1);
    const ids: string[] = [];
    for (let i = 0; i < 5000; i++) ids.push(ulid(t + Math.floor(i / 7)));
    expect([...ids].sort()).toEqual(ids);
  });
});
