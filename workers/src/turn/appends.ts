import type { EventDoc, EventDraft, EventLog, Lease, SessionDoc } from '@agentfleet/core';
import type { AppendFenced } from './types.js';

/** Session fields moved with an append's log head (EventLog AppendOptions.sessionUpdate). */
export type AppendExtra =
  Record<string, any> | ((lastSeq: number, current?: Readonly<SessionDoc>) => Record<string, any>);

/**
 * A worker's appends to the sessions it drains: each carries the drain's lease token (a newer
 * holder refuses it). What it wrote reaches the worker's log cache through the turn runner's
 * append hook (./runner.ts `start`, ./sessionLogCache.ts `appended`), so the turn's next
 * read through its own last append (`lastSeq`, which also tells the turn loop that it appended
 * since its last read) needs no store read. `forget` when the drain ends.
 */
export class SessionAppends {
  private readonly seqs = new Map<string, number>();

  constructor(private readonly events: Pick<EventLog, 'append'>) {}

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
    const written = this.events.append(tenant, sid, drafts, {
      fence: lease.token,
      sessionUpdate: update,
    });
    return written.then((w) => {
      if (w.length) this.seqs.set(sid, Math.max(this.seqs.get(sid) ?? 0, w.at(-1)!.seq));
      return w;
    });
  }

  fenced(tenant: string, sid: string, lease: Lease): AppendFenced {
    return (drafts, extra) => this.append(tenant, sid, lease, drafts, extra);
  }

  /** The highest seq the drain's appends got (undefined before its first). */
  lastSeq(sid: string): number | undefined {
    return this.seqs.get(sid);
  }

  forget(sid: string): void {
    this.seqs.delete(sid);
  }
}
