/**
 * What the worker reads and records about a session's turns beside the turn-state transitions
 * (those are ./turnState.ts, the only writer of the turn-state fields): the session document as
 * stored, its run record (`runs`, keyed by session id: the turn that started and has not ended,
 * which recovery resumes), the pages the recovery scan reads, and the usage a budgeted session's
 * counts lack. `SessionService.turns`; the worker's turn steps call it (workers/src/turn/).
 *
 * Guarantees: a session has at most one run record (its `_id` is the session id); a started
 * turn's record is written before its session.status_running (the caller issues both, record
 * first); the scan pages resume after a cursor in id order and skip nothing a store holds
 * (`scanPage`); missing usage is added by compare-and-set on the token counts the caller read,
 * so two workers reconciling at once add it once. Proved by test/e2e/turns/recovery-scan,
 * test/e2e/turns/rescheduling, test/e2e/server/crash-recovery, test/e2e/turns/budget-recovery
 * and test/e2e/turns/turn-final-write.
 */
import type { Collections, TenantCollection } from '../store/collections.js';
import type { Doc, Filter, Update } from '../store/port.js';
import type { EventDoc } from '../events/records.js';
import { nowIso } from '../util.js';
import type { RunDoc, SessionDoc } from './records.js';

/** The fields a worker records when its turn starts. */
export type RunStart = Pick<
  RunDoc,
  'run_id' | 'owner' | 'token' | 'start_seq' | 'input_to' | 'started_at'
>;

/** One page of a scan in id order, and where the page after it starts (undefined: wrap around). */
export interface ScanPage<T> {
  docs: T[];
  next: string | undefined;
}

/** The next page of `filter` after `after` in id order, and where the page after it starts. */
async function scanPage<T extends Doc & { tenant_id: string }>(
  c: Pick<TenantCollection<T>, 'scanAll'>,
  filter: Filter,
  after: string | undefined,
  batch: number,
): Promise<ScanPage<T>> {
  const where = after ? { ...filter, _id: { $gt: after } } : filter;
  const docs = await c.scanAll(where, { sort: { _id: 1 }, limit: batch });
  // One page per store: every store that filled its page read at least up to the batch-th
  // smallest id, so resuming after it skips nothing (ids past it may be read twice: harmless).
  if (docs.length < batch) return { docs, next: undefined };
  const ids = docs.map((d) => d._id).sort();
  return { docs, next: ids[batch - 1] };
}

export class SessionTurns {
  constructor(private readonly c: Pick<Collections, 'sessions' | 'runs' | 'events'>) {}

  /** The session document as stored (deleted and terminated ones too), or null. */
  session(tenant: string, sid: string): Promise<SessionDoc | null> {
    return this.c.sessions.get(tenant, sid);
  }

  /** The session's run record, or null (no turn started that has not ended). */
  run(tenant: string, sid: string): Promise<RunDoc | null> {
    return this.c.runs.get(tenant, sid);
  }

  /** Records the turn the worker starts (one record per session: a leftover one is replaced). */
  async startRun(tenant: string, sid: string, run: RunStart): Promise<void> {
    await this.c.runs.updateOne(tenant, { _id: sid }, { $set: { ...run } }, { upsert: true });
  }

  /** The worker resuming an orphaned turn takes its record (and ends its `rescheduling`). */
  async adoptRun(tenant: string, sid: string, owner: string, token: number): Promise<void> {
    await this.c.runs.updateOne(
      tenant,
      { _id: sid },
      { $set: { owner, token, rescheduled_at: null } },
    );
  }

  /** Marks the run `run_id` rescheduled (the scan announced it); another run is left alone. */
  async markRescheduled(tenant: string, sid: string, runId: string): Promise<void> {
    await this.c.runs.updateOne(
      tenant,
      { _id: sid, run_id: runId },
      { $set: { rescheduled_at: nowIso() } },
    );
  }

  /** The turn ended (or its session is gone): its run record goes. */
  async endRun(tenant: string, sid: string): Promise<void> {
    await this.c.runs.deleteOne(tenant, { _id: sid });
  }

  /** Run records of every tenant, a page after `after`: the recovery scan's orphan candidates. */
  runsPage(after: string | undefined, batch: number): Promise<ScanPage<RunDoc>> {
    return scanPage(this.c.runs, {}, after, batch);
  }

  /** Sessions of every tenant with input no worker consumed, a page after `after`. */
  pendingPage(after: string | undefined, batch: number): Promise<ScanPage<SessionDoc>> {
    return scanPage(this.c.sessions, { pending: true }, after, batch);
  }

  /** The session's events of these types, as stored (the usage span ends a budget reconciles). */
  eventsOfTypes(tenant: string, sid: string, types: readonly string[]): Promise<EventDoc[]> {
    return this.c.events.find(tenant, { session_id: sid, type: { $in: [...types] } });
  }

  /**
   * Applies `update` (usage and cost the session lacks) only while the session's fields still
   * equal `seen` (compare-and-set on what the caller read: added once); answers the session
   * after, or null when it is gone.
   */
  async addUsage(
    tenant: string,
    sid: string,
    seen: Record<string, unknown>,
    update: Pick<Update, '$inc' | '$set'>,
  ): Promise<SessionDoc | null> {
    await this.c.sessions.updateOne(tenant, { _id: sid, ...seen }, update);
    return this.c.sessions.get(tenant, sid);
  }
}
