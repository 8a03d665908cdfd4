import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case
let lastTime = 0;
/** The last id's 80 random bits as ten bytes, most significant first. */
const lastRandom = new Uint8Array(10);
/** Random bytes drawn in bulk: one getrandom call per 409 ids instead of one per id. */
const pool = new Uint8Array(4096);
let poolAt = pool.length;

/** Ten bytes as 16 base32 characters (two 40-bit halves: plain numbers, no BigInt). */
function encode80(b: Uint8Array): string {
  let out = '';
  for (let half = 0; half < 10; half += 5) {
    // 40 bits fit a double exactly; peel 5 bits at a time, least significant first.
    let v = 0;
    for (let i = half; i < half + 5; i++) v = v * 256 + b[i]!;
    let s = '';
    for (let i = 0; i < 8; i++) {
      s = ALPHABET[v % 32] + s;
      v = Math.floor(v / 32);
    }
    out += s;
  }
  return out;
}

/**
 * ULID-style ids: 48-bit millisecond time + 80 random bits, monotonic within a process, so
 * lexicographic order of ids is creation order (list cursors rely on it). Within one
 * millisecond (or when the clock steps back) the random part is the previous one plus 1.
 * Tests: core/test/ids.test.ts.
 */
export function ulid(now = Date.now()): string {
  if (now <= lastTime) {
    now = lastTime;
    for (let i = lastRandom.length - 1; i >= 0; i--) {
      if (lastRandom[i]! < 255) {
        lastRandom[i]!++;
        break;
      }
      lastRandom[i] = 0;
    }
  } else {
    if (poolAt + 10 > pool.length) {
      randomFillSync(pool);
      poolAt = 0;
    }
    lastRandom.set(pool.subarray(poolAt, poolAt + 10));
    poolAt += 10;
  }
  lastTime = now;
  let out = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return out + encode80(lastRandom);
}

export const newId = (prefix: string) => `${prefix}${ulid()}`;

export const PREFIX = {
  agent: 'agent_',
  environment: 'env_',
  session: 'sess_',
  event: 'sevt_',
  modelCard: 'mc_',
  apiKey: 'key_',
  tenant: 'tnt_',
  command: 'cmd_',
  run: 'run_',
} as const;
