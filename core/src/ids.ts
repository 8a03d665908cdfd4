import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, lower case
let lastTime = 0;
let lastRandom: Uint8Array = new Uint8Array(10);

/**
 * ULID-style ids: 48-bit millisecond time + 80 random bits, monotonic within a process, so
 * lexicographic order of ids is creation order (list cursors rely on it).
 */
export function ulid(now = Date.now()): string {
  let rand: Uint8Array;
  if (now <= lastTime) {
    now = lastTime;
    rand = lastRandom.slice();
    for (let i = rand.length - 1; i >= 0; i--) {
      if (rand[i]! < 255) {
        rand[i]!++;
        break;
      }
      rand[i] = 0;
    }
  } else {
    rand = randomBytes(10);
  }
  lastTime = now;
  lastRandom = rand;
  let out = '';
  let t = now;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  let bits = 0n;
  for (const b of rand) bits = (bits << 8n) | BigInt(b);
  let r = '';
  for (let i = 0; i < 16; i++) {
    r = ALPHABET[Number(bits & 31n)] + r;
    bits >>= 5n;
  }
  return out + r;
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
