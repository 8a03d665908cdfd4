import type { LiveEventOut, SessionEventOut } from '@agentfleet/schemas';
import { ApiError, notFound, StaleLeaseError } from '../errors.js';
import { newId, PREFIX } from '../ids.js';
import type { PubSub } from '../coordination/port.js';
import { DuplicateKeyError, type Update } from '../store/port.js';
import type { Collections } from '../store/collections.js';
import type { EventDoc } from './records.js';
import type { SessionDoc } from '../sessions/records.js';
import { nowIso } from '../util.js';
import type { PlatformMetrics } from '../metrics.js';
import type { ObjectStore } from '../objects/port.js';
import { listSessionEvents, type EventListOptions } from './list.js';
import { followSession, followSessionBatches, type FollowOptions } from './live.js';
import { hydrateEvents, servedPrefix, spillPayload } from './spill.js';

export interface EventDraft {
  /** Pre-allocated id (chunk events correlate with it); generated when absent. */
  id?: string;
  type: string;
  payload: Record<string, unknown>;
}

export interface AppendOptions {
  /** Lease fencing token of the writer; refused when a newer holder exists. */
  fence?: number;
  /**
   * Extra session fields to move in the same atomic update as the log head. `current` is the
   * session document as the update finds it, given when the append is one transaction (a store
   * with transactions: the update may depend on it); absent on the two-write path.
   */
  sessionUpdate?: (lastSeq: number, first: number, current?: Readonly<SessionDoc>) => Update;
  /** Terminal writes (termination, deletion) may append to a terminated session. */
  allowTerminated?: boolean;
  /**
   * The session as the caller just read and checked it (no fence): on the two-write path its
   * log head places the first attempt without another read. A head that moved meanwhile only
   * makes that attempt collide on (session_id, seq), and the repairing loop reads it afresh.
   */
  readSession?: Readonly<SessionDoc>;
}

/**
 * Called after events are durable and published (outbound webhooks: core/src/webhooks/hooks.ts).
 * A hook's failure is its own: it never fails the append.
 */
export type AppendHook = (tenant: string, sessionId: string, written: EventDoc[]) => Promise<void>;

export const sessionChannel = (sessionId: string) => `session:${sessionId}`;
export const controlChannel = (sessionId: string) => `session-control:${sessionId}`;

/**
 * The session event log.
 *
 * Guarantees: `seq` is gap-free per session and never duplicated. The next seq is read from
 * the session's log head and claimed by inserting under the unique (session_id, seq) index.
 * On a store with transactions (embedded) the head read, the insert and the head update are
 * one transaction (`appendAtomically`). Elsewhere they are separate writes: a lost race or a
 * crash between the insert and the head update is repaired from the events themselves
 * (test/e2e/sessions/session-log-head.test.ts "a log head left behind its events"), and readers of session
 * status allow for events past the head (../sessions/status.ts liveRuns). Appends carrying a fencing
 * token older than the session's are refused.
 * Every appended event is published live after it is durable. A payload over 500 KB is stored
 * as an `_spilled` reference to a blob written before the append (./spill.ts); every read
 * here, and `hydrate` for callers that query the collection themselves, serves it whole.
 */
export class EventLog {
  constructor(
    private readonly c: Collections,
    private readonly pubsub: PubSub,
    private readonly metrics?: PlatformMetrics,
    private readonly objects?: ObjectStore,
  ) {}

  private readonly appendHooks: AppendHook[] = [];
  /** Registers a hook run after every append (see AppendHook); the result removes it. */
  onAppended(hook: AppendHook): () => void {
    this.appendHooks.push(hook);
    return () => {
      const i = this.appendHooks.indexOf(hook);
      if (i >= 0) this.appendHooks.splice(i, 1);
    };
  }

  /**
   * True when the tenant's store appends in one transaction (`appendAtomically`): the events and
   * every session field moved with the head become visible together. On the two-write path a
   * reader can see the events before the head update's fields.
   */
  async appendsAtomically(tenant: string): Promise<boolean> {
    const { store } = await this.c.events.handle(tenant);
    return !!store.transaction;
  }

  /** Spilled payloads read back whole: callers that query the events collection directly. */
  hydrate(docs: EventDoc[]): Promise<EventDoc[]> {
    return this.objects ? hydrateEvents(this.objects, docs) : Promise.resolve(docs);
  }

  /** How many leading `docs` one page of a list serves (./spill.ts servedPrefix). */
  servedPrefix(docs: EventDoc[]): Promise<number> {
    return this.objects ? servedPrefix(this.objects, docs) : Promise.resolve(docs.length);
  }

  async append(
    tenant: string,
    sessionId: string,
    drafts: EventDraft[],
    opts: AppendOptions = {},
  ): Promise<EventDoc[]> {
    const ided = drafts.map((d) => ({ ...d, id: d.id ?? newId(PREFIX.event) }));
    // Blobs first, so a stored `_spilled` reference never dangles.
    const stored = new Map<string, Record<string, unknown>>();
    const blobs = new Map<string, string>();
    if (this.objects)
      for (const d of ided) {
        const r = await spillPayload(this.objects, tenant, sessionId, d.id, d.payload);
        stored.set(d.id, r.stored);
        if (r.key) blobs.set(d.id, r.key);
      }
    const written: EventDoc[] = [];
    try {
      const job = { tenant, sessionId, drafts: ided, stored, opts, written };
      if (!(await this.appendAtomically(job))) await this.appendDocs(job);
    } catch (err) {
      // The blobs of events not appended (refused, failed, or already stored under the same
      // id by an earlier attempt) go; a crash here leaves them under the session's spill
      // prefix, removed with the session (../sessions/cascade.ts).
      const kept = new Set(written.map((e) => e._id));
      for (const [id, key] of blobs)
        if (!kept.has(id)) await this.objects!.delete(key).catch(() => {});
      throw err;
    }
    this.metrics?.eventsAppended.inc({}, written.length);
    // Issued together, in seq order (each adapter delivers in call order), after the write.
    const channel = sessionChannel(sessionId);
    await Promise.all(written.map((e) => this.pubsub.publish(channel, renderEvent(e))));
    if (this.appendHooks.length)
      await Promise.all(this.appendHooks.map((h) => h(tenant, sessionId, written).catch(() => {})));
    return written;
  }

  /** The two-write append: insert, then move the head; repairs the head after a lost race. */
  private async appendDocs(job: AppendJob): Promise<void> {
    const { tenant, sessionId, stored, opts, written } = job;
    let pending = job.drafts;
    // A fenced append always reads the session: its fence is checked against the newest holder.
    let known = opts.fence === undefined ? opts.readSession : undefined;
    while (pending.length) {
      const read = known ?? (await this.c.sessions.get(tenant, sessionId));
      known = undefined;
      const s = appendable(read, sessionId, opts);
      const firstSeq = s.last_seq + 1;
      const docs = eventDocs(tenant, sessionId, pending, firstSeq);
      let batch = docs;
      try {
        await this.c.events.insertMany(
          tenant,
          docs.map((d) => ({ ...d, payload: stored.get(d._id) ?? d.payload })),
        );
      } catch (err) {
        if (!(err instanceof DuplicateKeyError) || err.index === '_id_') throw err;
        // Lost the race for a seq (or the head is behind after a crash): repair and go again.
        batch = docs.slice(0, err.insertedCount);
        await this.advanceHead(tenant, sessionId, batch, opts, firstSeq);
        written.push(...batch);
        pending = pending.slice(batch.length);
        await this.repairHead(tenant, sessionId);
        continue;
      }
      await this.advanceHead(tenant, sessionId, batch, opts, firstSeq);
      written.push(...batch);
      pending = [];
    }
  }

  /**
   * On a store with transactions (embedded): read the head, insert the events and move the head
   * in one transaction, so no reader ever sees events past the head and one commit is waited
   * for instead of two. False when the store has none, or when the head is behind the log (a
   * log written before this path existed, or by a crashed two-write append): the repairing loop
   * of `appendDocs` takes over.
   */
  private async appendAtomically(job: AppendJob): Promise<boolean> {
    const { tenant, sessionId, stored, opts, written } = job;
    const { store, collection: events } = await this.c.events.handle(tenant);
    if (!store.transaction) return false;
    const { collection: sessions } = await this.c.sessions.handle(tenant);
    try {
      const docs = await store.transaction((tx) => {
        let docs: EventDoc[] = [];
        // The head is read and moved in one step (one read of the session document).
        const { matched } = tx(sessions).updateOne({ _id: sessionId, tenant_id: tenant }, (s) => {
          const firstSeq = appendable(s, sessionId, opts).last_seq + 1;
          docs = eventDocs(tenant, sessionId, job.drafts, firstSeq);
          return headUpdate(docs, opts, firstSeq, s);
        });
        if (!matched) throw notFound('session', sessionId);
        tx(events).insertMany(docs.map((d) => ({ ...d, payload: stored.get(d._id) ?? d.payload })));
        return docs;
      });
      written.push(...docs);
      return true;
    } catch (err) {
      if (err instanceof DuplicateKeyError && err.index !== '_id_') return false;
      throw err;
    }
  }

  private async advanceHead(
    tenant: string,
    sessionId: string,
    batch: EventDoc[],
    opts: AppendOptions,
    firstSeq: number,
  ) {
    if (!batch.length) return;
    await this.c.sessions.updateOne(tenant, { _id: sessionId }, headUpdate(batch, opts, firstSeq));
  }

  private async repairHead(tenant: string, sessionId: string) {
    const top = await this.c.events.findOne(
      tenant,
      { session_id: sessionId },
      { sort: { seq: -1 } },
    );
    if (top)
      await this.c.sessions.updateOne(tenant, { _id: sessionId }, { $max: { last_seq: top.seq } });
  }

  /** Broadcast a live-only event (chunks): never persisted. */
  async publishLive(
    sessionId: string,
    event: Omit<LiveEventOut, 'session_id' | 'ephemeral'>,
  ): Promise<void> {
    await this.pubsub.publish(sessionChannel(sessionId), {
      ...event,
      session_id: sessionId,
      ephemeral: true,
    });
  }

  /** Events with seq in (afterSeq, upTo], ascending. */
  async range(
    tenant: string,
    sessionId: string,
    afterSeq: number,
    limit: number,
    upTo?: number,
  ): Promise<EventDoc[]> {
    const seq: Record<string, number> = { $gt: afterSeq };
    if (upTo !== undefined) seq.$lte = upTo;
    return this.hydrate(
      await this.c.events.find(tenant, { session_id: sessionId, seq }, { sort: { seq: 1 }, limit }),
    );
  }

  async all(tenant: string, sessionId: string): Promise<EventDoc[]> {
    return this.hydrate(
      await this.c.events.find(tenant, { session_id: sessionId }, { sort: { seq: 1 } }),
    );
  }

  /** One page of the session's events, as REST and GraphQL list them (./list.ts). */
  list(tenant: string, sessionId: string, o: EventListOptions) {
    return listSessionEvents(this.c, this, tenant, sessionId, o);
  }

  /** The session's events after `opts.afterSeq`, then live, one at a time (./live.ts). */
  follow(tenant: string, sessionId: string, opts: FollowOptions) {
    return followSession(this.c, this, this.pubsub, tenant, sessionId, opts);
  }

  /** follow's sequence in batches (./live.ts followSessionBatches). */
  followBatches(tenant: string, sessionId: string, opts: FollowOptions) {
    return followSessionBatches(this.c, this, this.pubsub, tenant, sessionId, opts);
  }
}

/** One append call: its drafts (ids assigned), spilled payloads, options, and what it wrote. */
interface AppendJob {
  tenant: string;
  sessionId: string;
  drafts: Array<EventDraft & { id: string }>;
  stored: Map<string, Record<string, unknown>>;
  opts: AppendOptions;
  written: EventDoc[];
}

/** The session, when `opts` may append to it; otherwise the refusal. */
function appendable(
  s: Readonly<SessionDoc> | null,
  sessionId: string,
  opts: AppendOptions,
): Readonly<SessionDoc> {
  if (!s || s.deleted_at) throw notFound('session', sessionId);
  if (opts.fence !== undefined && s.fence > opts.fence)
    throw new StaleLeaseError(
      `session ${sessionId}: lease token ${opts.fence} superseded by ${s.fence}`,
    );
  if (s.terminated_at && !opts.allowTerminated)
    throw new ApiError(
      'invalid_request',
      `session ${sessionId} is terminated and accepts no events`,
    );
  return s;
}

function eventDocs(
  tenant: string,
  sessionId: string,
  drafts: Array<EventDraft & { id: string }>,
  firstSeq: number,
): EventDoc[] {
  const now = nowIso();
  return drafts.map((d, i) => ({
    _id: d.id,
    tenant_id: tenant,
    session_id: sessionId,
    seq: firstSeq + i,
    type: d.type,
    payload: d.payload,
    created_at: now,
  }));
}

/** The log head moves to the batch's last seq, with the caller's session fields. */
function headUpdate(
  batch: EventDoc[],
  opts: AppendOptions,
  firstSeq: number,
  current?: Readonly<SessionDoc>,
): Update {
  const last = batch[batch.length - 1]!.seq;
  const extra = opts.sessionUpdate?.(last, firstSeq, current) ?? {};
  return {
    ...extra,
    $max: { ...(extra.$max ?? {}), last_seq: last },
    $set: { ...(extra.$set ?? {}), updated_at: nowIso() },
  };
}

/** Served shape: the SDK's flat event plus the spec's `data`, `seq`, `session_id`, `created_at`. */
export function renderEvent(e: EventDoc): SessionEventOut {
  return {
    ...e.payload,
    id: e._id,
    type: e.type,
    seq: e.seq,
    session_id: e.session_id,
    created_at: e.created_at,
    processed_at: e.created_at,
    data: e.payload,
  };
}
