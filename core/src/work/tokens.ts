/**
 * The claimed-session bearer (`sessions_token`): issued by every claim of a work item, bound to
 * that claim's generation, and resolved back to its claim on every request (no cache).
 *
 * Shape: `afst_<tenant>.<work id>.<generation>.<random>`; only its SHA-256 is stored (on the
 * work item, `token_hash`), compared in constant time. A token of a replaced claim (the item
 * was claimed again) is refused at once everywhere except its heartbeat (412) and stop (409),
 * which tell its worker it lost the item (test/e2e/work/work-reclaim.test.ts, "reclaim rotates the
 * sessions token").
 */
import { randomToken, safeEqual, sha256 } from '../crypto.js';

export const SESSIONS_TOKEN_PREFIX = 'afst_';
const MAX_TOKEN_LENGTH = 300;

export interface ParsedSessionsToken {
  tenantId: string;
  workId: string;
  generation: number;
}

export const issueSessionsToken = (tenantId: string, workId: string, generation: number) =>
  `${SESSIONS_TOKEN_PREFIX}${tenantId}.${workId}.${generation}.${randomToken(32)}`;

export const isSessionsToken = (key: string) => key.startsWith(SESSIONS_TOKEN_PREFIX);

export function parseSessionsToken(token: string): ParsedSessionsToken | null {
  if (!isSessionsToken(token) || token.length > MAX_TOKEN_LENGTH) return null;
  const parts = token.slice(SESSIONS_TOKEN_PREFIX.length).split('.');
  if (parts.length !== 4) return null;
  const [tenantId, workId, gen] = parts as [string, string, string, string];
  if (!/^[a-z0-9_]{1,64}$/i.test(tenantId) || !/^work_[a-z0-9]{1,64}$/i.test(workId)) return null;
  if (!/^[1-9]\d{0,9}$/.test(gen)) return null;
  return { tenantId, workId, generation: Number(gen) };
}

export const tokenHash = (token: string) => sha256(token);
export const tokenMatches = (token: string, hash: string | null) =>
  !!hash && safeEqual(sha256(token), hash);
