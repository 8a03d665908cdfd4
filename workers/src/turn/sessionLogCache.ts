/**
 * The worker's in-process copy of session event logs, so a turn reads only the events appended
 * since its last read instead of the whole log on every model request (the log grows with the
 * session: a full read per request made turn overhead grow with the session's age).
 *
 * Guarantees:
 * - `all(tenant, sessionId)` returns what `EventLog.all` returns at the time of the call: the
 *   cached prefix plus every event the store holds after it (read with `EventLog.range`, so
 *   spilled payloads arrive whole). Events are immutable once written and `seq` is gap-free, so
 *   a cached prefix is never stale, whichever process appended to the log: no invalidation or
 *   staleness bound is needed. Only a contiguous run of seqs is kept; an event read past a gap
 *   (a concurrent append still landing) is returned but re-read next time.
 * - Cached events are deep-frozen: a caller that mutates one throws instead of corrupting the
 *   next turn's history. An array `all` returned never changes afterwards: the entry's array
 *   is copied at its next extension once handed out, and extended in place otherwise (so a
 *   turn's appends do not each copy the whole log).
 * - Memory is bounded: at most `maxBytes` of payload JSON across sessions (default 64 MiB); the
 *   least recently used sessions are dropped first, and a log larger than the bound is never
 *   cached (it is read from the store each time).
 * - A deleted session's entry is never served: its log reads come after the turn checked that
 *   the session exists, and `forget` drops it.
 * - `appended(tenant, sessionId, written)` adds events just appended (what `EventLog.append`
 *   returned; the turn runner's append hook calls it for every append made in its process: the
 *   worker's own, and the gateway's input when both run there) when they extend the cached run
 *   directly; otherwise it does nothing and the next read fetches them.
 * - `all(…, through)` with `through` at or below the cached run's last seq answers from the
 *   cache without a store read: a prefix of the log that holds every event up to `through` (the
 *   turn's input, or its own last append: events others append after it enter at the next
 *   turn, history.ts, input.ts).
 * - `history(tenant, sessionId, log)` builds the model history from a log this cache returned,
 *   with a fold kept in the session's entry (./history.ts HistoryBuilder): only the events past
 *   the previous call are folded. It goes with the entry (eviction, `forget`); a session that
 *   is not cached gets a full build. `settleFrom` is the same for the calls a turn settles
 *   first (./openCalls.ts).
 * Proven by test/e2e/turns/turn-log-cache.test.ts and workers/test/history-builder.test.ts.
 */
import { deepFreeze, type ChatMessage, type EventDoc, type EventLog } from '@agentfleet/core';
import { buildHistory, HistoryBuilder } from './history.js';
import { OpenCalls } from './openCalls.js';

const PAGE = 10_000;
/** What an event counts against the byte bound (an estimate: its payload's JSON and a margin). */
const eventBytes = (e: EventDoc) => JSON.stringify(e.payload).length + 200;
export const DEFAULT_LOG_CACHE_BYTES = 64 * 2 ** 20;

interface Entry {
  events: EventDoc[];
  bytes: number;
  history?: HistoryBuilder;
  open?: OpenCalls;
  /**
   * True once `events` was handed to a caller: the next extension copies it (so an array a
   * caller holds never changes), the ones after push in place until it is handed out again.
   */
  shared: boolean;
}

export class SessionLogCache {
  private readonly entries = new Map<string, Entry>();
  private bytes = 0;

  constructor(
    private readonly log: Pick<EventLog, 'range'>,
    private readonly maxBytes = DEFAULT_LOG_CACHE_BYTES,
  ) {}

  /**
   * Every event of the session, ascending by seq (see the file header); with `through`, a prefix
   * holding at least every event up to that seq, from the cache when it reaches that far.
   */
  async all(tenant: string, sessionId: string, through?: number): Promise<readonly EventDoc[]> {
    const key = `${tenant}\u0000${sessionId}`;
    const entry = this.entries.get(key);
    if (through !== undefined && entry?.events.length && entry.events.at(-1)!.seq >= through)
      return this.handOut(entry);
    const cachedLength = entry?.events.length ?? 0;
    const cachedLast = cachedLength ? entry!.events[cachedLength - 1]!.seq : undefined;
    const fresh: EventDoc[] = [];
    let after = cachedLast ?? 0;
    for (;;) {
      const page = await this.log.range(tenant, sessionId, after, PAGE);
      fresh.push(...page);
      if (page.length < PAGE) break;
      after = page[page.length - 1]!.seq;
    }
    // Extended meanwhile (this worker's append landed during the read): answer without keeping;
    // the next read catches up. The entry's first `cachedLength` events are the ones read after.
    if (entry && (this.entries.get(key) !== entry || entry.events.length !== cachedLength))
      return entry.events.slice(0, cachedLength).concat(fresh);
    // Keep the contiguous run that extends the cached prefix.
    let last = cachedLast;
    let keep = 0;
    let added = 0;
    for (const e of fresh) {
      if (last !== undefined && e.seq !== last + 1) break;
      last = e.seq;
      added += eventBytes(e);
      keep++;
    }
    const next = this.extend(key, entry, fresh.slice(0, keep).map(deepFreeze), added);
    // Its events are the cached run with the kept ones; the rest (past a gap) are added here.
    return keep === fresh.length ? this.handOut(next) : next.events.concat(fresh.slice(keep));
  }

  private handOut(entry: Entry): readonly EventDoc[] {
    entry.shared = true;
    return entry.events;
  }

  /**
   * The events this worker appended to the session (`EventLog.append`'s result), kept when they
   * extend the cached run (file header). They are copied before being frozen: the caller's
   * payload objects stay its own.
   */
  appended(tenant: string, sessionId: string, written: readonly EventDoc[]): void {
    const key = `${tenant}\u0000${sessionId}`;
    const entry = this.entries.get(key);
    if (!entry?.events.length || !written.length) return;
    let last = entry.events.at(-1)!.seq;
    let added = 0;
    for (const e of written) {
      if (e.seq !== ++last) return; // not contiguous: the next read fetches the run
      added += eventBytes(e);
    }
    // Copied the way the store reads them back (JSON): the same object shapes as the events
    // read from the store, so the turn's scans of the log stay monomorphic.
    const copies = written.map((e) => deepFreeze(JSON.parse(JSON.stringify(e)) as EventDoc));
    this.extend(key, entry, copies, added);
  }

  /**
   * The session's entry with `events` (frozen, extending its run; `bytes` of them) added, as
   * the most recently used; dropped instead when it grows past the bound (it is returned
   * either way).
   * An array handed out is copied once (`Entry.shared`); otherwise the events are pushed in
   * place, so a turn's appends do not each copy the whole log.
   */
  private extend(key: string, entry: Entry | undefined, events: EventDoc[], bytes: number): Entry {
    const next: Entry = entry ?? { events: [], bytes: 0, shared: false };
    if (entry) this.entries.delete(key); // re-inserted below as the most recently used
    if (events.length) {
      if (next.shared) {
        next.events = next.events.concat(events);
        next.shared = false;
      } else for (const e of events) next.events.push(e);
    }
    next.bytes += bytes;
    this.bytes += bytes;
    if (next.bytes > this.maxBytes) this.bytes -= next.bytes;
    else this.entries.set(key, next);
    this.evict();
    return next;
  }

  /** The model history of `log` (what `all` returned), folded incrementally (file header). */
  history(tenant: string, sessionId: string, log: readonly EventDoc[]): ChatMessage[] {
    const entry = this.entries.get(`${tenant}\u0000${sessionId}`);
    if (!entry) return buildHistory(log);
    entry.history ??= new HistoryBuilder(true);
    return entry.history.build(log);
  }

  /**
   * Where a cloud session's `log` (what `all` returned) can be settled from (./openCalls.ts),
   * folded incrementally in the session's entry; 0 (the whole log) for a session not cached.
   */
  settleFrom(tenant: string, sessionId: string, log: readonly EventDoc[]): number {
    const entry = this.entries.get(`${tenant}\u0000${sessionId}`);
    if (!entry) return 0;
    entry.open ??= new OpenCalls();
    return entry.open.start(log);
  }

  /** Drops a session's entry (its log was deleted). */
  forget(tenant: string, sessionId: string): void {
    const key = `${tenant}\u0000${sessionId}`;
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }

  /** Payload bytes held (estimate) and sessions cached. */
  stats(): { bytes: number; sessions: number } {
    return { bytes: this.bytes, sessions: this.entries.size };
  }

  private evict(): void {
    for (const [key, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) return;
      this.entries.delete(key);
      this.bytes -= entry.bytes;
    }
  }
}
