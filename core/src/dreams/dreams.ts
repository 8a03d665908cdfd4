/**
 * Dreams (SDK 1.12 `client.beta.dreams`): asynchronous jobs that read one memory store and some
 * sessions' canonical events and write a reorganised version of the store, to a NEW memory store
 * (`output_behavior` `create_new`, the default) or into the input store (`update_existing`).
 *
 * Guarantees (test/e2e/memory/dreams.test.ts; update_existing: test/e2e/memory/dreams-update.test.ts):
 * - create validates every id in the tenant (400 naming `inputs[i]…` for a missing, archived or
 *   other tenant's store or session), the model (400 naming `model`) and, for update_existing,
 *   `output_behavior.memory_store_id` (required, the input store), records the dream `pending`
 *   and publishes `dream.run.requested`;
 * - at most one update_existing dream per store until it has fully stopped: its hold on the
 *   store is a compare-and-swap (./hold.ts); a second create is a 409 naming the holder;
 * - a worker claims a dream with a compare-and-swap on `claimed_until`: two workers never run one
 *   dream; a dead worker's claim expires (DREAM_MAX_RUN_MS + 30 s) and the worker scan
 *   (DREAM_SCAN_MS) runs it again, at most 3 claims;
 * - create_new: the input store is never written; the output store is created and filled only
 *   after the model's whole answer was parsed and checked, and deleted again when the dream did
 *   not end `completed` (cancel raced the writes, a write failed): no half-written output store;
 * - update_existing (./output.ts, ./apply.ts): nothing is written before the whole answer checked
 *   out and the dream recorded the store in `outputs` (a cancel, failure or timeout before that
 *   leaves the store untouched); then every write carries the hash precondition of what the
 *   dream read, and a memory someone else changed meanwhile is left as it is and named in the
 *   dream's error (`memory_conflict`). A worker that dies while applying leaves some writes done;
 *   the re-run reads the store as it then is and applies its answer with fresh preconditions;
 * - cancel stops a running dream (its model call is aborted within a poll of the record) and is
 *   final; a run over DREAM_MAX_RUN_MS fails with error type `timeout`; a model error or an
 *   unusable answer fails with a clear {type, message}: never a 5xx. */
import type { CostService } from '../cost/ledger.js';
import type { DreamCreate, DreamListQuery } from '@agentfleet/schemas';
import { ApiError, invalid, notFound } from '../errors.js';
import { newId } from '../ids.js';
import type { Logger } from '../log.js';
import type { Collections } from '../store/collections.js';
import type { EventLog } from '../events/log.js';
import type { ModelResolver } from '../models/models.js';
import { createdAtBounds, pageById, type Page } from '../api/pagination.js';
import type { MemoryService } from '../memory/memory.js';
import type { CommandBus } from '../bus/port.js';
import type { Filter } from '../store/port.js';
import { ModelError, type ModelUsage } from '../models/port.js';
import {
  FINAL_STATUSES,
  LIVE_STATUSES,
  renderDream,
  zeroUsage,
  type Dream,
  type DreamDoc,
  type DreamInputDoc,
} from './records.js';
import { askModel } from '../models/ask.js';
import { dreamRequest, DreamFailure, DREAM_SYSTEM, parseAnswer, type DreamSource } from './run.js';
import type { ReadMemory } from './apply.js';
import { updateExisting, writeNewStore } from './output.js';
import { releaseHold, storeHeld, takeHold } from './hold.js';
import { checkInputs } from './inputs.js';
import type { MemoryActor } from '../memory/records.js';

export const DREAM_PREFIX = 'drm_';
const MAX_CLAIMS = 3;
/** An update_existing dream is unclaimable this long after its insert, until it holds its store. */
const CREATE_GRACE_MS = 60_000;
/** How often a running dream re-reads its record to notice a cancel. */
const CANCEL_POLL_MS = 200;

export interface DreamDeps {
  c: Collections;
  memory: MemoryService;
  models: ModelResolver;
  events: EventLog;
  bus: CommandBus;
  config: { maxRunMs: number; scanMs: number; maxTokens: number };
  log: Logger;
  /** The cost report's runtime ledger: each dream's model call, kind `dream`. */
  cost?: Pick<CostService, 'record'>;
}

const nowIso = () => new Date().toISOString();
const usageInc = (u: ModelUsage) => ({
  'usage.input_tokens': u.input_tokens,
  'usage.output_tokens': u.output_tokens,
  'usage.cache_creation_input_tokens': u.cache_creation_input_tokens,
  'usage.cache_read_input_tokens': u.cache_read_input_tokens,
});

export class DreamService {
  private readonly running = new Map<string, { abort: AbortController; done: Promise<void> }>();
  constructor(private readonly deps: DreamDeps) {}

  private async doc(tenant: string, id: string): Promise<DreamDoc> {
    const d = await this.deps.c.dreams.get(tenant, id);
    if (!d) throw notFound('dream', id);
    return d;
  }

  /**
   * Records the dream `pending` and publishes its run. `update_existing` takes the store's hold
   * (./hold.ts) after the record exists (so a holder id always names a record) and before the
   * run is published; the record is unclaimable until then (CREATE_GRACE_MS), and deleted again
   * with a 409 when another dream holds the store.
   */
  async create(tenant: string, b: DreamCreate, actor: MemoryActor | null = null): Promise<Dream> {
    const model = typeof b.model === 'string' ? { id: b.model, speed: null } : b.model;
    if (model.speed === 'fast') throw invalid('model.speed', "dreams accept only 'standard'");
    const update = b.output_behavior?.type === 'update_existing';
    const target = b.output_behavior?.memory_store_id;
    if (!update && target)
      throw invalid('output_behavior.memory_store_id', "is only for 'update_existing'");
    if (update && !target)
      throw invalid('output_behavior.memory_store_id', "is required for 'update_existing'");
    const { store, sessions } = await checkInputs(this.deps.c, tenant, b);
    if (update && target !== store)
      throw invalid(
        'output_behavior.memory_store_id',
        `must be the memory store of the memory_store input (${store})`,
      );
    await this.deps.models.validateForAgent(tenant, { id: model.id });
    const now = nowIso();
    const inputs: DreamInputDoc[] = [
      { type: 'memory_store', memory_store_id: store },
      { type: 'sessions', session_ids: sessions },
    ];
    const doc: Omit<DreamDoc, 'tenant_id'> = {
      _id: newId(DREAM_PREFIX),
      status: 'pending',
      inputs,
      store_id: store,
      model: { id: model.id, speed: 'standard' },
      instructions: b.instructions ?? null,
      output_behavior: update
        ? { type: 'update_existing', memory_store_id: store }
        : { type: 'create_new' },
      outputs: [],
      error: null,
      usage: zeroUsage(),
      actor: update ? actor : null,
      claim: null,
      claimed_until: update ? Date.now() + CREATE_GRACE_MS : 0,
      attempts: 0,
      archived_at: null,
      created_at: now,
      ended_at: null,
      updated_at: now,
    };
    await this.deps.c.dreams.insert(tenant, doc);
    if (update) {
      const hold = await takeHold(this.deps.c, tenant, store, doc._id);
      if (!hold.held) {
        await this.deps.c.dreams.deleteOne(tenant, { _id: doc._id });
        throw storeHeld(store, hold);
      }
      await this.deps.c.dreams.updateOne(
        tenant,
        { _id: doc._id, claim: null },
        { $set: { claimed_until: 0 } },
      );
      doc.claimed_until = 0;
    }
    // A lost publish is recovered by the worker scan (pending, unclaimed).
    await this.deps.bus
      .publish('dream.run.requested', { tenant_id: tenant, dream_id: doc._id })
      .catch((err) => this.deps.log.warn('dream publish failed', { err: String(err) }));
    return renderDream({ ...doc, tenant_id: tenant });
  }

  async get(tenant: string, id: string): Promise<Dream> {
    return renderDream(await this.doc(tenant, id));
  }

  async list(tenant: string, q: DreamListQuery): Promise<Page<Dream>> {
    const filter: Filter = {};
    if (!q.include_archived) filter.archived_at = null;
    if (q.statuses?.length) filter.status = { $in: q.statuses };
    const created = createdAtBounds(q);
    if (created) filter.created_at = created;
    const page = await pageById(this.deps.c.dreams, tenant, filter, q, 'desc');
    return { ...page, data: page.data.map(renderDream) };
  }

  /** Final dreams only (400 for pending/running); archiving again returns it unchanged. */
  async archive(tenant: string, id: string): Promise<Dream> {
    const d = await this.doc(tenant, id);
    if (!FINAL_STATUSES.includes(d.status))
      throw invalid('dream_id', `dream ${id} is ${d.status}; cancel it before archiving`);
    const now = nowIso();
    await this.deps.c.dreams.updateOne(
      tenant,
      { _id: id, archived_at: null },
      { $set: { archived_at: now, updated_at: now } },
    );
    return this.get(tenant, id);
  }

  /** pending/running → canceled (the running worker notices and aborts); canceled: unchanged. */
  async cancel(tenant: string, id: string): Promise<Dream> {
    const now = nowIso();
    const after = await this.deps.c.dreams.findOneAndUpdate(
      tenant,
      { _id: id, status: { $in: LIVE_STATUSES } },
      { $set: { status: 'canceled', ended_at: now, updated_at: now } },
      { returnDocument: 'after' },
    );
    if (after) {
      this.running.get(id)?.abort.abort(new DreamFailure('canceled', 'canceled'));
      // No worker holds it: nothing will write the store, so the store is free now.
      if (after.output_behavior.type === 'update_existing' && after.claimed_until <= Date.now())
        await releaseHold(this.deps.c, tenant, after.store_id, id);
      return renderDream(after);
    }
    const d = await this.doc(tenant, id);
    if (d.status !== 'canceled')
      throw invalid(
        'dream_id',
        `dream ${id} is already ${d.status}; only pending or running dreams can be canceled`,
      );
    return renderDream(d);
  }

  // ---- the worker side: what the runner (workers/src/jobs/dreamRunner.ts) calls ----

  /** Claims the dream (compare-and-swap) and runs it in the background; false: not claimable. */
  async claimAndRun(tenant: string, id: string, nowMs = Date.now()): Promise<boolean> {
    const token = newId('claim_');
    const d = await this.deps.c.dreams.findOneAndUpdate(
      tenant,
      { _id: id, status: { $in: LIVE_STATUSES }, claimed_until: { $lte: nowMs } },
      {
        $set: {
          status: 'running',
          claim: token,
          claimed_until: nowMs + this.deps.config.maxRunMs + 30_000,
          updated_at: nowIso(),
        },
        $inc: { attempts: 1 },
      },
      { returnDocument: 'after' },
    );
    if (!d) return false;
    const abort = new AbortController();
    const entry = { abort, done: Promise.resolve() };
    entry.done = this.execute(d, token, abort).finally(() => {
      if (this.running.get(id) === entry) this.running.delete(id);
    });
    this.running.set(id, entry);
    return true;
  }

  /** Dreams whose command was lost or whose worker died, claimed and started. */
  async sweep(nowMs = Date.now()): Promise<number> {
    const due = await this.deps.c.dreams.scanAll(
      { status: { $in: LIVE_STATUSES }, claimed_until: { $lte: nowMs } },
      { sort: { claimed_until: 1 }, limit: 50 },
    );
    let started = 0;
    for (const d of due) if (await this.claimAndRun(d.tenant_id, d._id, nowMs)) started++;
    return started;
  }

  /** Settles the dream if it is still this claim's: the compare-and-swap every end goes through. */
  private async finish(d: DreamDoc, token: string, set: Partial<DreamDoc>): Promise<boolean> {
    const now = nowIso();
    const r = await this.deps.c.dreams.updateOne(
      d.tenant_id,
      { _id: d._id, claim: token, status: 'running' },
      { $set: { ...set, claim: null, claimed_until: 0, ended_at: now, updated_at: now } },
    );
    return r.modified === 1;
  }

  /** Runs the claimed dream; an update_existing dream frees its store once it is final. */
  private async execute(d: DreamDoc, token: string, abort: AbortController): Promise<void> {
    try {
      await this.run(d, token, abort);
    } finally {
      if (d.output_behavior.type === 'update_existing') {
        const now = await this.deps.c.dreams.get(d.tenant_id, d._id).catch(() => null);
        if (now && FINAL_STATUSES.includes(now.status))
          await releaseHold(this.deps.c, d.tenant_id, d.store_id, d._id).catch((err) =>
            this.deps.log.warn('dream hold release failed', { dream_id: d._id, err: String(err) }),
          );
      }
    }
  }

  private async run(d: DreamDoc, token: string, abort: AbortController): Promise<void> {
    const { c, log } = this.deps;
    const tenant = d.tenant_id;
    if (d.attempts > MAX_CLAIMS) {
      await this.finish(d, token, {
        status: 'failed',
        error: {
          type: 'internal_error',
          message: `the dream's worker stopped ${MAX_CLAIMS} times`,
        },
      });
      return;
    }
    const limitMs = this.deps.config.maxRunMs;
    const timer = setTimeout(
      () =>
        abort.abort(
          new DreamFailure('timeout', `the dream ran longer than DREAM_MAX_RUN_MS (${limitMs} ms)`),
        ),
      limitMs,
    );
    // A cancel from any replica: the record leaves `running` or the claim changes.
    const poll = setInterval(() => {
      c.dreams
        .get(tenant, d._id)
        .then((now) => {
          if (!now || now.status !== 'running' || now.claim !== token)
            abort.abort(new DreamFailure('canceled', 'canceled'));
        })
        .catch(() => {});
    }, CANCEL_POLL_MS);
    let outputStore: string | null = null;
    try {
      const update = d.output_behavior.type === 'update_existing';
      if (update) {
        // Normally taken at create; taken here when the creating process died before that.
        const hold = await takeHold(c, tenant, d.store_id, d._id);
        if (!hold.held)
          throw new DreamFailure(
            'conflict',
            `memory store ${d.store_id} is held by ${hold.holder || 'another dream'}`,
          );
      }
      const { answer, read } = await this.think(d, abort.signal);
      if (abort.signal.aborted) throw abort.signal.reason;
      const out = { ...this.deps, finish: (set: Partial<DreamDoc>) => this.finish(d, token, set) };
      if (update) return await updateExisting(out, d, token, read, answer, abort.signal);
      outputStore = await writeNewStore(out, d, answer, abort.signal);
      const ok = await this.finish(d, token, {
        status: 'completed',
        outputs: [{ type: 'memory_store', memory_store_id: outputStore }],
      });
      if (!ok) throw new DreamFailure('canceled', 'canceled');
      outputStore = null;
    } catch (err) {
      const reason = abort.signal.aborted ? abort.signal.reason : err;
      const failure =
        reason instanceof DreamFailure
          ? reason
          : reason instanceof ModelError
            ? new DreamFailure(reason.kind, `the model request failed: ${reason.message}`)
            : reason instanceof ApiError
              ? new DreamFailure('invalid_request', reason.message)
              : new DreamFailure('internal_error', 'the dream failed unexpectedly');
      if (!(reason instanceof DreamFailure || reason instanceof ModelError))
        log.warn('dream failed', { dream_id: d._id, err: String(reason) });
      if (failure.type === 'released')
        await c.dreams.updateOne(
          tenant,
          { _id: d._id, claim: token, status: 'running' },
          { $set: { claim: null, claimed_until: 0, updated_at: nowIso() } },
        );
      else if (failure.type !== 'canceled')
        await this.finish(d, token, {
          status: 'failed',
          error: { type: failure.type, message: failure.message },
        });
    } finally {
      clearTimeout(timer);
      clearInterval(poll);
      if (outputStore)
        await this.deps.memory.deleteStore(tenant, outputStore).catch((err) => {
          log.warn('dream output cleanup failed', { dream_id: d._id, err: String(err) });
        });
    }
  }

  /** Reads the inputs and asks the model; usage is recorded on the dream as it arrives. */
  private async think(d: DreamDoc, signal: AbortSignal) {
    const { c, events, models } = this.deps;
    const tenant = d.tenant_id;
    const memories = await c.memories.find(tenant, { store_id: d.store_id }, { sort: { path: 1 } });
    // What update_existing's preconditions compare against: each memory as the dream read it.
    const read: ReadMemory[] = memories.map((m) => ({
      _id: m._id,
      path: m.path,
      content: m.content ?? '',
      content_sha256: m.content_sha256,
      version_id: m.version_id,
    }));
    const sessionIds = d.inputs.flatMap((i) => (i.type === 'sessions' ? i.session_ids : []));
    const src: DreamSource = {
      memories: memories.map((m) => ({ path: m.path, content: m.content ?? '' })),
      sessions: [],
    };
    for (const id of sessionIds) {
      const evs = await events.all(tenant, id);
      src.sessions.push({ id, events: evs.map((e) => ({ type: e.type, payload: e.payload })) });
    }
    const resolved = await models.resolve(tenant, { id: d.model.id, speed: 'standard' });
    let usage: Promise<unknown> = Promise.resolve();
    const text = await askModel(
      resolved.provider,
      {
        model: resolved.wireModel,
        system: DREAM_SYSTEM,
        messages: dreamRequest(d, src),
        maxTokens: this.deps.config.maxTokens,
        signal,
      },
      (u) => {
        usage = Promise.all([
          c.dreams.updateOne(tenant, { _id: d._id }, { $inc: usageInc(u) }),
          this.deps.cost
            ?.record({
              tenantId: tenant,
              sessionId: null,
              agentId: null,
              agentVersion: null,
              modelCard: d.model.id,
              provider: resolved.providerId,
              model: resolved.wireModel,
              kind: 'dream',
              usage: u,
            })
            .catch((err) => this.deps.log.error('cost ledger write failed', { err: String(err) })),
        ]);
      },
    );
    // Recorded before the dream can end, so a completed dream shows its final usage.
    await usage;
    return { answer: parseAnswer(text), read };
  }

  /**
   * Stops every dream this process runs and releases it for another replica (its claim ends
   * now); resolves once they have all stopped. The worker's runner calls it when it stops.
   */
  async releaseRunning(): Promise<void> {
    for (const r of this.running.values()) {
      r.abort.abort(new DreamFailure('released', 'worker stopping'));
      await r.done.catch(() => {});
    }
  }
}
