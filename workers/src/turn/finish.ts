/**
 * How a turn ends: the one session.status_idle, appended with the turn's last events, and the
 * session bookkeeping that moves with it (processed_seq, idle_seq, the pending flag, the run
 * record). A turn whose model answer is final and that has nothing left to do before the idle
 * (no active sandbox to sync, no MCP connection to close) appends that answer (its events and
 * usage, `TurnEnd.held`) in the same write as the idle: one transaction on the embedded store
 * instead of two (only there: see answerMayWaitForIdle). A crash before that write
 * loses what a crash during the model stream loses today: the open span is reconciled and the
 * request made again (./recovery.ts). Proven by test/e2e/turns/turn-final-write.test.ts,
 * test/e2e/server/crash-recovery.test.ts and test/e2e/sessions/sessions-events.test.ts.
 */
import {
  idleClearsPending,
  turnIdle,
  type Lease,
  type EventDraft,
  type Logger,
  type SandboxManager,
  type SessionDoc,
} from '@agentfleet/core';
import type { WorkerServices } from '../services.js';
import type { SessionAppends } from './appends.js';
import type { TurnEnd } from './events.js';
import { outputWarnings } from './outputs.js';
import { memoryWarnings } from './memory.js';

export interface TurnFinishDeps {
  p: Pick<WorkerServices, 'sessions' | 'turnState' | 'metrics' | 'memory'>;
  sandbox: SandboxManager | null;
  log: Logger;
  appends: SessionAppends;
}

/**
 * True when nothing runs between a final answer and the idle (see the file header), and the
 * store appends atomically (`atomic`: EventLog.appendsAtomically). On the two-write path
 * (MongoDB, FerretDB) the idle event is visible before its head update, so a client that saw
 * the idle could read the session without the answer's usage; there the answer keeps its own
 * append, whose usage lands before the idle is written.
 */
export function answerMayWaitForIdle(
  sandbox: SandboxManager | null,
  sid: string,
  mcpConnected: boolean,
  atomic: boolean,
): boolean {
  return atomic && !mcpConnected && sandbox?.state(sid) !== 'active';
}

/** Appends the turn's idle (after a held answer, output and memory warnings). True: see drain. */
export async function finishTurn(
  d: TurnFinishDeps,
  tenant: string,
  sid: string,
  lease: Lease,
  inputTo: number,
  end: TurnEnd,
  started?: SessionDoc,
  /** Appended right before the idle (a child thread's reply: ./threads.ts). */
  last: EventDraft[] = [],
): Promise<boolean> {
  // The turn's own session document serves, unless an interrupt moved interrupt_seq.
  const s = started && !end.interrupted ? started : await d.p.sessions.turns.session(tenant, sid);
  const processed = Math.max(inputTo, end.interrupted ? (s?.interrupt_seq ?? 0) : 0);
  // Files the turn wrote under /mnt/session/outputs are durable before the turn reports idle;
  // each file that was not stored (quota, name) gets a session.warning naming it, before idle.
  // The run record's start gives the turn's running time for the session's stats.
  const [warnings, run] = await Promise.all([
    outputWarnings(d.sandbox, s, d.log),
    d.p.sessions.turns.run(tenant, sid),
  ]);
  // Mounted memory stores: the turn's changes become memory writes (./memory.ts).
  const memory = await memoryWarnings(d.p, d.sandbox, s, d.log);
  // With the append one transaction (embedded store), the pending flag is cleared in it, under
  // the same condition as clearPending; `cleared` stays undefined on the two-write path.
  let cleared: boolean | undefined;
  const idle = {
    type: 'session.status_idle',
    payload: {
      stop_reason: end.stop_reason,
      stop_details: null,
      ...(end.interrupted ? { interrupted: true } : {}),
    },
  };
  const held = end.held;
  const activeMs = run ? Math.max(0, Date.now() - Date.parse(run.started_at)) : 0;
  const update = {
    ...held?.update,
    $inc: { ...held?.update?.$inc, active_ms: activeMs },
  };
  await d.appends.append(
    tenant,
    sid,
    lease,
    [...(held?.drafts ?? []), ...warnings, ...memory, ...last, idle],
    (idleSeq, current) => {
      cleared = idleClearsPending(current, processed);
      return turnIdle(processed, idleSeq, cleared, update);
    },
  );
  // processed_seq moved with the idle: the pending flag (unless cleared above) and the run
  // record go now (either one lost in a crash is repaired: drain clears a stale flag, recover
  // a finished run).
  const [done] = await Promise.all([
    cleared ?? d.p.turnState.clearPending(tenant, sid, processed),
    d.p.sessions.turns.endRun(tenant, sid),
  ]);
  d.p.metrics.turnsFinished.inc({
    stop_reason: String(end.stop_reason.type),
    interrupted: end.interrupted ? 'true' : 'false',
  });
  return done;
}

export function markProcessed(
  p: Pick<WorkerServices, 'turnState'>,
  tenant: string,
  sid: string,
  upTo: number,
) {
  return p.turnState.markProcessed(tenant, sid, upTo);
}
