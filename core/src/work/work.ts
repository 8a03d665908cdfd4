/**
 * The Environment Work API's domain (`platform.work`): the work queue of self-hosted
 * environments, claimed by the official EnvironmentWorker / WorkPoller of either SDK.
 *
 * The flow the official TS EnvironmentWorker drives (lib/environments/worker.js), each step
 * answered here:
 *  1. `GET  /v1/environments/:env/work/poll?block_ms=999` (environment key as Bearer,
 *     `Anthropic-Worker-ID` header) → an item with `secret` = base64url `{sessions_token}`;
 *  2. `POST …/work/:id/ack` (environment key) → state `starting`, lease taken;
 *  3. `POST …/work/:id/heartbeat?expected_last_heartbeat=NO_HEARTBEAT` then the previous answer's
 *     `last_heartbeat` (sessions token) → state `active`, lease and token renewed by `ttl_seconds`;
 *  4. with the sessions token: `GET /v1/sessions/:sid`, `GET …/events/stream`,
 *     `GET …/events?limit=1000`, `POST …/events` (user.tool_result) — gateway/src/claimedSession.ts;
 *  5. `POST …/work/:id/stop {force: true}` (sessions token) → `stopped`; a second stop is 409.
 *
 * Guarantees (tests in test/e2e/work/work-api.test.ts, test/e2e/work/work-race.test.ts, test/e2e/work/work-reclaim.test.ts):
 * - creating a session on a self_hosted environment enqueues one item durably (a session has at
 *   most one open item: unique `open`) and emits the wake-hint webhook
 *   `session.status_run_started`; a message to a session whose item stopped enqueues a new one;
 *   a deleted session's item is stopped instead of being handed out;
 * - a claim is a compare-and-swap on the item's `rev` (findOneAndUpdate), so of any number of
 *   racing pollers exactly one wins an item ("10 pollers, one winner");
 * - a claimed, unacknowledged item is reclaimable after `reclaim_older_than_ms`; an acknowledged
 *   one only once its coordination lease (Redis in fleet mode) has expired;
 * - every claim bumps `generation` and issues a new sessions token; the previous token resolves
 *   to nothing from that write on, and its heartbeat is 412 `heartbeat_precondition_failed`
 *   with the server's `current_state` (the SDK's BetaHeartbeatPreconditionFailedError);
 * - a heartbeat whose `expected_last_heartbeat` is not the stored one (`NO_HEARTBEAT` for none)
 *   is 412 too, except while `stopping`/`stopped`;
 * - out-of-range arguments are 400 naming the field.
 */
import { conflict, invalid, notFound } from '../errors.js';
import type { Collections } from '../store/collections.js';
import type { Lease, LeaseStore, PubSub } from '../coordination/port.js';
import { DuplicateKeyError } from '../store/port.js';
import type { Logger } from '../log.js';
import { applyMetadataPatch } from '../api/metadata.js';
import {
  DEFAULT_LEASE_TTL_S,
  DEFAULT_RECLAIM_MS,
  encodeWorkSecret,
  leaseKey,
  leaseOwner,
  MAX_BLOCK_MS,
  MAX_LEASE_TTL_S,
  MAX_RECLAIM_MS,
  MIN_LEASE_TTL_S,
  NO_HEARTBEAT,
  REPLACED_KEPT,
  renderWork,
  type WorkDoc,
  type WorkView,
} from './records.js';
import { issueSessionsToken, parseSessionsToken, tokenHash, tokenMatches } from './tokens.js';
import { intArg, WorkWaiters } from './waiters.js';
import { beat, listWork, newWorkDoc, preconditionFailed, workStats } from './queue.js';

export interface WorkWebhookEmitter {
  emit(tenantId: string, type: string, data: { id: string; [k: string]: unknown }): Promise<void>;
}

export interface WorkDeps {
  c: Collections;
  leases: LeaseStore;
  pubsub: PubSub;
  log: Logger;
  /** platform.webhooks once wired (hooks' issue-11 part); absent → no wake-hint. */
  webhooks: () => WorkWebhookEmitter | undefined;
}

/** What a claimed-session bearer resolves to, rechecked against the live item on each request. */
export interface SessionClaim {
  tenantId: string;
  sessionId: string;
  workId: string;
  environmentId: string;
  generation: number;
  /** The token's time ran out (no heartbeat) or the item stopped: work calls only. */
  expired: boolean;
  /** The token belongs to a replaced claim (the item was claimed again): heartbeat → 412. */
  replaced: boolean;
}

export interface PollArgs {
  block_ms?: unknown;
  reclaim_older_than_ms?: unknown;
  worker_id?: string | undefined;
}
export interface HeartbeatArgs {
  desired_ttl_seconds?: unknown;
  expected_last_heartbeat?: unknown;
}

const OPEN_STATES = ['starting', 'active', 'stopping'];
const CAS_ATTEMPTS = 5;
const SCAN = 20;

export class WorkService {
  /** The clock for claim ages and token expiry (tests may replace it; leases use their own). */
  now: () => number = Date.now;
  private readonly waiters: WorkWaiters;
  constructor(private readonly d: WorkDeps) {
    this.waiters = new WorkWaiters(d.pubsub);
  }

  /** Enqueues the session's work item unless it has an open one; wakes pollers, emits the hint. */
  async enqueue(tenant: string, s: { id: string; environment_id: string }): Promise<void> {
    if (await this.d.c.work.findOne(tenant, { open: s.id })) return;
    const doc = newWorkDoc(s, new Date(this.now()).toISOString());
    try {
      await this.d.c.work.insert(tenant, doc);
    } catch (e) {
      if (e instanceof DuplicateKeyError) return; // a concurrent enqueue won
      throw e;
    }
    await this.waiters.notify(tenant, s.environment_id);
    const data = { id: s.id, environment_id: s.environment_id, work_id: doc._id };
    await this.d
      .webhooks()
      ?.emit(tenant, 'session.status_run_started', data)
      .catch((e: unknown) =>
        this.d.log.warn('wake-hint webhook not recorded', { work_id: doc._id, error: String(e) }),
      );
  }

  private async envOf(tenant: string, envId: string) {
    const env = await this.d.c.environments.get(tenant, envId);
    if (!env) throw notFound('environment', envId);
    return env;
  }

  private async item(tenant: string, envId: string, id: string): Promise<WorkDoc> {
    const d = await this.d.c.work.get(tenant, id);
    if (!d || d.environment_id !== envId) throw notFound('work', id);
    return d;
  }

  private cas(tenant: string, d: WorkDoc, set: Partial<WorkDoc>) {
    const updated_at = new Date(this.now()).toISOString();
    return this.d.c.work.findOneAndUpdate(
      tenant,
      { _id: d._id, rev: d.rev },
      { $set: { ...set, updated_at }, $inc: { rev: 1 } },
      { returnDocument: 'after' },
    );
  }

  /** Long poll: claims the oldest claimable item, or answers null after `block_ms`. */
  async poll(tenant: string, envId: string, a: PollArgs): Promise<WorkView | null> {
    const blockMs = intArg(a.block_ms, 'block_ms', 1, MAX_BLOCK_MS) ?? 0;
    const reclaimMs =
      intArg(a.reclaim_older_than_ms, 'reclaim_older_than_ms', 1, MAX_RECLAIM_MS) ??
      DEFAULT_RECLAIM_MS;
    await this.envOf(tenant, envId);
    if (a.worker_id) await this.seePoller(tenant, envId, a.worker_id);
    const deadline = Date.now() + blockMs;
    for (;;) {
      const won = await this.tryClaim(tenant, envId, reclaimMs, a.worker_id ?? null);
      if (won) return won;
      const left = deadline - Date.now();
      if (left <= 0) return null;
      await this.waiters.wait(tenant, envId, left);
    }
  }

  private async tryClaim(tenant: string, envId: string, reclaimMs: number, worker: string | null) {
    const now = this.now();
    const queued = await this.d.c.work.find(
      tenant,
      {
        environment_id: envId,
        state: 'queued',
        $or: [{ generation: 0 }, { claimed_ms: { $lt: now - reclaimMs } }],
      },
      { sort: { _id: 1 }, limit: SCAN },
    );
    const lapsed = await this.d.c.work.find(
      tenant,
      { environment_id: envId, state: { $in: OPEN_STATES }, lease_expires_ms: { $lt: now } },
      { sort: { _id: 1 }, limit: SCAN },
    );
    for (const d of [...queued, ...lapsed]) {
      if (d.state !== 'queued') {
        // Acknowledged: reclaimable only once the lease store says its lease is gone.
        if (await this.d.leases.holder(leaseKey(d._id))) continue;
        if (d.state === 'stopping') {
          await this.finishStop(tenant, d);
          continue;
        }
      }
      // A deleted session's item is never handed out: it is finished instead.
      const session = await this.d.c.sessions.get(tenant, d.session_id);
      if (!session || session.deleted_at) {
        await this.finishStop(tenant, d);
        continue;
      }
      const generation = d.generation + 1;
      const token = issueSessionsToken(tenant, d._id, generation);
      const won = await this.cas(tenant, d, {
        state: 'queued',
        generation,
        claimed_ms: now,
        worker_id: worker,
        token_hash: tokenHash(token),
        replaced_hashes: [
          ...(d.replaced_hashes ?? []),
          ...(d.token_hash ? [d.token_hash] : []),
        ].slice(-REPLACED_KEPT),
        token_expires_ms: now + DEFAULT_LEASE_TTL_S * 1000,
        lease_token: null,
        lease_ttl_s: null,
        lease_expires_ms: null,
        acknowledged_at: null,
        started_at: null,
        latest_heartbeat_at: null,
      });
      if (won) {
        this.d.log.info('work claimed', {
          work_id: d._id,
          generation,
          reclaimed: d.generation > 0,
        });
        return renderWork(won, encodeWorkSecret(token));
      }
    }
    return null;
  }

  /** Workers seen polling (stats.workers_polling), written at most every 10 s per worker. */
  private readonly seen = new Map<string, number>();
  private async seePoller(tenant: string, envId: string, worker: string) {
    const id = `${envId}:${worker.slice(0, 200)}`;
    const now = this.now();
    if ((this.seen.get(id) ?? 0) > now - 10_000) return;
    if (this.seen.size > 10_000) this.seen.clear();
    this.seen.set(id, now);
    await this.d.c.workPollers.updateOne(
      tenant,
      { _id: id },
      { $set: { environment_id: envId, last_poll_ms: now } },
      { upsert: true },
    );
  }

  async ack(tenant: string, envId: string, id: string, claim?: SessionClaim): Promise<WorkView> {
    for (let i = 0; i < CAS_ATTEMPTS; i++) {
      const d = await this.item(tenant, envId, id);
      if (claim && claim.generation !== d.generation)
        throw conflict(`work ${id} was reclaimed by another worker`);
      if (d.state === 'starting' || d.state === 'active') return renderWork(d);
      if (d.state !== 'queued')
        throw conflict(`work ${id} is ${d.state} and cannot be acknowledged`);
      if (d.generation === 0)
        throw conflict(`work ${id} has not been polled; poll claims it first`);
      const lease = await this.takeLease(d, DEFAULT_LEASE_TTL_S);
      if (!lease) throw conflict(`work ${id} is leased by another worker`);
      const now = this.now();
      const won = await this.cas(tenant, d, {
        state: 'starting',
        acknowledged_at: new Date(now).toISOString(),
        lease_token: lease.token,
        lease_ttl_s: DEFAULT_LEASE_TTL_S,
        lease_expires_ms: now + DEFAULT_LEASE_TTL_S * 1000,
        token_expires_ms: now + DEFAULT_LEASE_TTL_S * 1000,
      });
      if (won) return renderWork(won);
      await this.d.leases.release(lease).catch(() => {});
    }
    throw conflict(`work ${id} changed concurrently; retry`);
  }

  /** The current generation's lease: renewed when this generation holds it, else acquired. */
  private async takeLease(d: WorkDoc, ttlS: number): Promise<Lease | null> {
    const key = leaseKey(d._id);
    const owner = leaseOwner(d._id, d.generation);
    if (d.lease_token !== null) {
      const held: Lease = { key, owner, token: d.lease_token, expiresAt: 0 };
      if (await this.d.leases.renew(held, ttlS * 1000)) return held;
    }
    return this.d.leases.acquire(key, owner, ttlS * 1000);
  }

  async heartbeat(
    tenant: string,
    envId: string,
    id: string,
    a: HeartbeatArgs,
    claim?: SessionClaim,
  ) {
    const desired = intArg(
      a.desired_ttl_seconds,
      'desired_ttl_seconds',
      MIN_LEASE_TTL_S,
      MAX_LEASE_TTL_S,
    );
    const expected = a.expected_last_heartbeat;
    if (expected !== undefined && expected !== null && typeof expected !== 'string')
      throw invalid('expected_last_heartbeat', `must be an RFC 3339 timestamp or ${NO_HEARTBEAT}`);
    if (typeof expected === 'string' && expected.length > 64)
      throw invalid('expected_last_heartbeat', 'is longer than 64 characters');
    const d = await this.item(tenant, envId, id);
    if (claim && claim.generation !== d.generation)
      throw preconditionFailed(d, 'the work item was reclaimed; this claim was replaced');
    if (d.state === 'stopped')
      return beat(d.latest_heartbeat_at ?? '', false, 'stopped', d.lease_ttl_s ?? 0);
    if (d.generation === 0) throw conflict(`work ${id} has not been polled; poll claims it first`);
    if (d.state !== 'stopping' && typeof expected === 'string') {
      const stored = d.latest_heartbeat_at ?? NO_HEARTBEAT;
      if (expected !== stored)
        throw preconditionFailed(d, 'expected_last_heartbeat does not match the lease');
    }
    const ttl = desired ?? d.lease_ttl_s ?? DEFAULT_LEASE_TTL_S;
    const lease = await this.takeLease(d, ttl);
    if (!lease) throw preconditionFailed(d, 'the lease is held by another worker');
    const now = this.now();
    let at = new Date(now).toISOString();
    if (at === d.latest_heartbeat_at) at = new Date(now + 1).toISOString();
    const iso = new Date(now).toISOString();
    const won = await this.cas(tenant, d, {
      state: d.state === 'stopping' ? 'stopping' : 'active',
      latest_heartbeat_at: at,
      acknowledged_at: d.acknowledged_at ?? iso,
      started_at: d.started_at ?? iso,
      lease_token: lease.token,
      lease_ttl_s: ttl,
      lease_expires_ms: now + ttl * 1000,
      token_expires_ms: now + ttl * 1000,
    });
    if (!won) {
      if (lease.token !== d.lease_token) await this.d.leases.release(lease).catch(() => {});
      const cur = await this.item(tenant, envId, id);
      throw preconditionFailed(cur, 'another heartbeat or claim changed the lease');
    }
    return beat(at, true, won.state, ttl);
  }

  /** Graceful (`stopping`, seen by the worker's next heartbeat) or forced (`stopped`) stop. */
  async stop(tenant: string, envId: string, id: string, force: boolean, claim?: SessionClaim) {
    for (let i = 0; i < CAS_ATTEMPTS; i++) {
      const d = await this.item(tenant, envId, id);
      if (claim && claim.generation !== d.generation)
        throw conflict(`work ${id} was reclaimed by another worker`);
      if (d.state === 'stopped') throw conflict(`work ${id} is already stopped`);
      const idle = d.state === 'queued'; // nobody runs it: nothing to wait for
      if (!force && !idle) {
        if (d.state === 'stopping') return renderWork(d);
        const won = await this.cas(tenant, d, {
          state: 'stopping',
          stop_requested_at: new Date(this.now()).toISOString(),
        });
        if (won) return renderWork(won);
        continue;
      }
      const won = await this.finishStop(tenant, d);
      if (won) return renderWork(won);
    }
    throw conflict(`work ${id} changed concurrently; retry`);
  }

  private async finishStop(tenant: string, d: WorkDoc): Promise<WorkDoc | null> {
    const now = new Date(this.now()).toISOString();
    const won = await this.cas(tenant, d, {
      state: 'stopped',
      open: d._id,
      stop_requested_at: d.stop_requested_at ?? now,
      stopped_at: now,
    });
    if (won && d.lease_token !== null)
      await this.d.leases
        .release({
          key: leaseKey(d._id),
          owner: leaseOwner(d._id, d.generation),
          token: d.lease_token,
          expiresAt: 0,
        })
        .catch(() => {});
    return won;
  }

  async update(tenant: string, envId: string, id: string, body: unknown): Promise<WorkView> {
    const b = body as { metadata?: unknown } | null;
    if (!b || typeof b !== 'object' || Array.isArray(b) || !('metadata' in b))
      throw invalid('metadata', 'is required');
    const extra = Object.keys(b).find((k) => k !== 'metadata');
    if (extra) throw invalid(extra, 'is not a known field');
    if (!b.metadata || typeof b.metadata !== 'object' || Array.isArray(b.metadata))
      throw invalid('metadata', 'must be an object of string or null values');
    for (const [k, v] of Object.entries(b.metadata)) {
      if (k.length > 64)
        throw invalid(`metadata.${k.slice(0, 64)}`, 'keys are at most 64 characters');
      if (v !== null && (typeof v !== 'string' || v.length > 512))
        throw invalid(`metadata.${k}`, 'must be a string of at most 512 characters, or null');
    }
    for (let i = 0; i < CAS_ATTEMPTS; i++) {
      const d = await this.item(tenant, envId, id);
      const metadata = applyMetadataPatch(d.metadata, b.metadata as Record<string, string | null>);
      const won = await this.cas(tenant, d, { metadata });
      if (won) return renderWork(won);
    }
    throw conflict(`work ${id} changed concurrently; retry`);
  }

  async retrieve(tenant: string, envId: string, id: string): Promise<WorkView> {
    return renderWork(await this.item(tenant, envId, id));
  }

  list(tenant: string, envId: string, q: { limit?: unknown; page?: unknown }) {
    return this.envOf(tenant, envId).then(() => listWork(this.d.c, tenant, envId, q));
  }

  async stats(tenant: string, envId: string) {
    await this.envOf(tenant, envId);
    return workStats(this.d.c, tenant, envId, this.now());
  }

  /**
   * A sessions token → its live claim, or null when the token is unknown, not the item's
   * current generation, or its hash does not match. Read from the store on every call.
   */
  async authenticateSessionsToken(token: string): Promise<SessionClaim | null> {
    const t = parseSessionsToken(token);
    if (!t) return null;
    const d = await this.d.c.work.get(t.tenantId, t.workId);
    if (!d) return null;
    const current = d.generation === t.generation && tokenMatches(token, d.token_hash);
    const replaced =
      !current &&
      t.generation < d.generation &&
      (d.replaced_hashes ?? []).some((h) => tokenMatches(token, h));
    if (!current && !replaced) return null;
    return {
      tenantId: t.tenantId,
      sessionId: d.session_id,
      workId: d._id,
      environmentId: d.environment_id,
      generation: t.generation,
      expired: replaced || d.state === 'stopped' || (d.token_expires_ms ?? 0) <= this.now(),
      replaced,
    };
  }

  /**
   * The claimed session's document as stored (deleted ones included), or null when it is gone:
   * what a claimed-session bearer's capability checks read its resources and agent skills from
   * (gateway/src/claimedSession.ts; test/e2e/work/work-bearer.test.ts).
   */
  claimedSession(claim: Pick<SessionClaim, 'tenantId' | 'sessionId'>) {
    return this.d.c.sessions.get(claim.tenantId, claim.sessionId);
  }
}
