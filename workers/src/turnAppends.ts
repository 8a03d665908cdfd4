import type { EventDoc, EventDraft, EventLog, Lease, SessionDoc } from '@agentfleet/core';
import type { AppendFenced } from './modelRequest.js';
import type { SessionLogCache } from './sessionLogCache.js';

/** Session fields moved with an append's log head (EventLog AppendOptions.sessionUpdate). */
export type AppendExtra =
  Record<string, any> | ((lastSeq: number, current?: Readonly<SessionDoc>) => Record<string, any>);

/**
 * A worker's appends to the sessions it drains: each carries the drain's lease token (a newer
 * holder refuses it), and what it wrote goes into the worker's log cache
 * (./sessionLogCache.ts `appended`), so the turn's next read through its own last append
 * (`lastSeq`) needs no store read. `count` changes with every append a drain issues (the turn
 * loop re-reads its log only after one). `forget` when the drain ends.
 */
export class SessionAppends {
  private readonly counts = new Map<string, number>();
  private readonly seqs = new Map<string, number>();

  constructor(
    private readonly events: Pick<EventLog, 'append'>,
    private readonly logs: SessionLogCache,
  ) {}

  append(
    tenant: string,
    sid: string,
    lease: Lease,
    drafts: EventDraft[],
    extra?: AppendExtra,
  ): Promise<EventDoc[]> {
    const update =
      typeof extra === 'function'
        ? (last: number, _first: number, current?: Readonly<SessionDoc>) => extra(last, current)
        : extra
          ? () => extra
          : undefined;
    this.counts.set(sid, (this.counts.get(sid) ?? 0) + 1);
    const written = this.events.append(tenant, sid, drafts, {
      fence: lease.token,
      sessionUpdate: update,
    });
    return written.then((w) => {
      this.logs.appended(tenant, sid, w);
      if (w.length) this.seqs.set(sid, Math.max(this.seqs.get(sid) ?? 0, w.at(-1)!.seq));
      return w;
    });
  }

  fenced(tenant: string, sid: string, lease: Lease): AppendFenced {
    return (drafts, extra) => this.append(tenant, sid, lease, drafts, extra);
  }

  /** Appends issued for the session since its drain began. */
  count(sid: string): number | undefined {
    return this.counts.get(sid);
  }

  /** The highest seq the drain's appends got. */
  lastSeq(sid: string): number | undefined {
    return this.seqs.get(sid);
  }

  forget(sid: string): void {
    this.counts.delete(sid);
    this.seqs.delete(sid);
  }
}
