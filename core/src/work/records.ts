/**
 * Work items of self-hosted environments (SDK 1.12 `BetaSelfHostedWork`): the stored document,
 * its rendering, the Work `secret` and the bounds of the Work API's arguments.
 *
 * Guarantees:
 * - a rendered item is exactly the SDK's shape (type, id, environment_id, data, state, metadata,
 *   secret, created_at, acknowledged_at, started_at, latest_heartbeat_at, stop_requested_at,
 *   stopped_at); `secret` is non-null only in a poll answer (test/e2e/work/work-api.test.ts, "the SDK's
 *   work calls");
 * - the secret is base64url JSON `{sessions_token}` (`BetaWorkSecret`), which both SDKs'
 *   `EnvironmentWorker` decode (TS `sessionsTokenFromSecret`, Python `_sessions_token_from_secret`);
 * - only SHA-256 digests of sessions tokens are stored (`token_hash`, `replaced_hashes`): the
 *   token itself is never stored, logged or rendered after the poll answer.
 */

export type WorkState = 'queued' | 'starting' | 'active' | 'stopping' | 'stopped';

export interface WorkDoc {
  _id: string;
  tenant_id: string;
  environment_id: string;
  session_id: string;
  state: WorkState;
  metadata: Record<string, string>;
  /**
   * Unique: the session id while the item is not stopped, its own id once stopped, so a session
   * has at most one open work item.
   */
  open: string;
  /** Bumped by every claim (poll): the claim-bound sessions token names it. 0 = never claimed. */
  generation: number;
  /** Bumped by every write: the compare-and-swap version. */
  rev: number;
  /** Epoch ms of the current claim (poll), null while never claimed. */
  claimed_ms: number | null;
  worker_id: string | null;
  /** SHA-256 of the current claim's sessions token. */
  token_hash: string | null;
  /**
   * SHA-256 of the last few replaced claims' tokens: they authenticate only to learn they were
   * replaced (heartbeat 412, stop 409); every other request with them is 401.
   */
  replaced_hashes?: string[];
  /** The current sessions token may append events until then (epoch ms); heartbeat extends it. */
  token_expires_ms: number | null;
  /** The coordination lease of an acknowledged claim (fencing token) and its ttl. */
  lease_token: number | null;
  lease_ttl_s: number | null;
  /** When that lease runs out if not renewed (epoch ms; a hint: the lease store decides). */
  lease_expires_ms: number | null;
  created_at: string;
  updated_at: string;
  acknowledged_at: string | null;
  started_at: string | null;
  latest_heartbeat_at: string | null;
  stop_requested_at: string | null;
  stopped_at: string | null;
}

/** The SDK's `NO_HEARTBEAT` sentinel of `expected_last_heartbeat`: no heartbeat recorded yet. */
export const NO_HEARTBEAT = 'NO_HEARTBEAT';
/** Lease ttl when a heartbeat asks for none, and the sessions token's life without heartbeat. */
export const DEFAULT_LEASE_TTL_S = 90;
export const MIN_LEASE_TTL_S = 1;
export const MAX_LEASE_TTL_S = 3600;
/** `block_ms`: the SDK documents 1-999. */
export const MAX_BLOCK_MS = 999;
/** `reclaim_older_than_ms`: default 5000 (SDK), at most a day. */
export const DEFAULT_RECLAIM_MS = 5000;
export const MAX_RECLAIM_MS = 86_400_000;
/** Workers counted by stats as polling: those seen within this window. */
export const POLLING_WINDOW_MS = 30_000;
/** Replaced claims' token hashes kept on an item. */
export const REPLACED_KEPT = 5;

export const leaseKey = (workId: string) => `work:${workId}`;
export const leaseOwner = (workId: string, generation: number) => `${workId}#g${generation}`;

/** base64url JSON `BetaWorkSecret`: what the SDK workers decode to find their bearer. */
export const encodeWorkSecret = (sessionsToken: string): string =>
  Buffer.from(JSON.stringify({ sessions_token: sessionsToken })).toString('base64url');

/** The served item: SDK BetaSelfHostedWork (compile-time checked in test/e2e/work/work-api.test.ts). */
export interface WorkView {
  type: 'work';
  id: string;
  environment_id: string;
  data: { type: 'session'; id: string };
  state: WorkState;
  metadata: Record<string, string>;
  secret: string | null;
  created_at: string;
  acknowledged_at: string | null;
  started_at: string | null;
  latest_heartbeat_at: string | null;
  stop_requested_at: string | null;
  stopped_at: string | null;
}

export function renderWork(d: WorkDoc, secret: string | null = null): WorkView {
  return {
    type: 'work',
    id: d._id,
    environment_id: d.environment_id,
    data: { type: 'session', id: d.session_id },
    state: d.state,
    metadata: d.metadata,
    secret,
    created_at: d.created_at,
    acknowledged_at: d.acknowledged_at,
    started_at: d.started_at,
    latest_heartbeat_at: d.latest_heartbeat_at,
    stop_requested_at: d.stop_requested_at,
    stopped_at: d.stopped_at,
  };
}

/** A worker seen polling an environment (Work stats `workers_polling`). */
export interface WorkPollerDoc {
  _id: string;
  tenant_id: string;
  environment_id: string;
  last_poll_ms: number;
}
