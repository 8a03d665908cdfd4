import { randomBytes } from 'node:crypto';

/**
 * Request ids (`request-id` header, `request_id` of error bodies): `req_` + 26 lower-case base32
 * characters, ULID-shaped: 10 of millisecond time, 8 of a random per-process prefix (40 bits,
 * drawn once), 8 of a per-process counter. Guarantees: unique within a process (the counter
 * wraps only after 2^40 requests), unique across processes unless two draw the same 40-bit
 * prefix in the same millisecond, and ordered by time. Cheaper than core's ulid() per request
 * (no randomBytes or BigInt work on the request path). Format asserted in
 * test/e2e/api/api-hardening.test.ts ("request-id") and test/e2e/auth/gateway-read-path.test.ts.
 */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'; // Crockford base32, as core/src/ids.ts

function base32(n: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = ALPHABET[n % 32] + out;
    n = Math.floor(n / 32);
  }
  return out;
}

const processPrefix = base32(randomBytes(5).readUIntBE(0, 5), 8);
const COUNTER_SPAN = 32 ** 8;
let counter = 0;
let lastMs = -1;
let timePart = '';

export function newRequestId(): string {
  const now = Date.now();
  if (now !== lastMs) {
    lastMs = now;
    timePart = base32(now, 10);
  }
  counter = (counter + 1) % COUNTER_SPAN;
  return `req_${timePart}${processPrefix}${base32(counter, 8)}`;
}
