/**
 * What a worker does about turns another worker left behind. Guarantees: the recovery scan
 * re-publishes a turn command for every session with a run record or pending input that no
 * worker holds (lease) or is draining, so input is never stranded by a lost command or a crash;
 * a live run record that no worker holds is announced once, under the session lease, with
 * session.status_rescheduled and marked `rescheduled_at` (the session's status is
 * `rescheduling` until a worker resumes it); reconciliation closes every model span the dead
 * worker left open (session.warning interrupted_stream) and answers every tool call it left
 * without a result (agent.tool_use or agent.mcp_tool_use) with an error result
 * (session.warning orphan_tool_use; a call held for
 * confirmation by always_ask never ran and stays open: test/e2e/sandbox/permission-crash.test.ts), between
 * session.status_rescheduled (appended here unless the scan already did) and
 * session.status_running. On a self_hosted session (../tools/selfHosted.ts) a call the worker
 * executes is not an orphan either: it stays open for the worker's user.tool_result (a result
 * the worker already sent counts), so recovery never answers, re-executes or replays it; the
 * resumed turn ends with requires_action naming it. Proven by test/e2e/server/crash-recovery.test.ts,
 * test/e2e/turns/rescheduling.test.ts and test/e2e/work/self-hosted-lane-crash.test.ts.
 */
import { runIsLive, type EventDoc, type EventDraft } from '@agentfleet/core';
import type { WorkerServices } from '../services.js';
import { spanEnd, zeroUsage } from './events.js';
import type { SelfHostedLane } from '../tools/selfHosted.js';

/** The events that reconcile an orphaned turn's log before the loop continues. */
export function reconciliationDrafts(
  turn: EventDoc[],
  lane: SelfHostedLane | null = null,
): EventDraft[] {
  const lastStatus = [...turn]
    .reverse()
    .find((e) => e.type === 'session.status_rescheduled' || e.type === 'session.status_running');
  const announced = lastStatus?.type === 'session.status_rescheduled';
  const drafts: EventDraft[] = announced
    ? []
    : [{ type: 'session.status_rescheduled', payload: {} }];
  const ended = new Set(
    turn
      .filter((e) => e.type === 'span.model_request_end')
      .map((e) => e.payload.model_request_start_id),
  );
  for (const st of turn.filter((e) => e.type === 'span.model_request_start' && !ended.has(e._id))) {
    drafts.push(spanEnd(st._id, true, zeroUsage(), 'interrupted'));
    drafts.push({
      type: 'session.warning',
      payload: {
        warning: 'interrupted_stream',
        message: 'a model response was interrupted by a worker restart and is retried',
        model_request_start_id: st._id,
      },
    });
  }
  const results = new Set(
    turn.flatMap((e) =>
      e.type === 'agent.tool_result' || e.type === 'user.tool_result'
        ? [e.payload.tool_use_id]
        : e.type === 'agent.mcp_tool_result'
          ? [e.payload.mcp_tool_use_id]
          : [],
    ),
  );
  // A call held for confirmation (evaluated_permission 'ask') never ran: it stays open for the
  // client (workers/src/tools/permissions.ts), it is not an orphan.
  const orphan = (e: EventDoc) =>
    (e.type === 'agent.tool_use' || e.type === 'agent.mcp_tool_use') &&
    !results.has(e._id) &&
    e.payload.evaluated_permission !== 'ask' &&
    !lane?.awaits(e);
  for (const tu of turn.filter(orphan)) {
    const content = [
      { type: 'text', text: 'the tool call was interrupted by a restart and was not completed' },
    ];
    drafts.push(
      tu.type === 'agent.mcp_tool_use'
        ? {
            type: 'agent.mcp_tool_result',
            payload: { mcp_tool_use_id: tu._id, content, is_error: true },
          }
        : { type: 'agent.tool_result', payload: { tool_use_id: tu._id, content, is_error: true } },
    );
    drafts.push({
      type: 'session.warning',
      payload: {
        warning: 'orphan_tool_use',
        message: 'a tool call was interrupted by a worker restart',
        tool_use_id: tu._id,
      },
    });
  }
  drafts.push({ type: 'session.status_running', payload: {} });
  return drafts;
}

/** True when the orphaned turn's last model response completed without asking for tools. */
export function lastResponseFinished(turn: EventDoc[]): boolean {
  const lastEnd = [...turn].reverse().find((e) => e.type === 'span.model_request_end');
  return !!lastEnd && !lastEnd.payload.is_error && lastEnd.payload.stop_reason !== 'tool_use';
}

/**
 * Where a worker's next recovery scan resumes. A scan reads at most a batch
 * (RECOVERY_SCAN_BATCH) of run records and of pending sessions, in id order after the cursor
 * (core/src/sessions/turns.ts runsPage, pendingPage),
 * and wraps around after a short page: with more sessions than a batch waiting (busy ones
 * among them), every one is still reached within a few scans instead of the first batch being
 * read again and again.
 */
export interface RecoveryCursor {
  runs?: string;
  pending?: string;
}

/** What the recovery scan uses: the run records and pending sessions, leases, the bus. */
export type RecoveryServices = Pick<
  WorkerServices,
  'sessions' | 'config' | 'coordination' | 'bus' | 'turnState' | 'events'
>;

/** Re-drives orphaned runs (lease expired) and unprocessed input (e.g. a command lost in a crash). */
export async function recoveryScan(
  p: RecoveryServices,
  busyHere: (sid: string) => boolean,
  owner = 'recovery-scan',
  cursor: RecoveryCursor = {},
): Promise<void> {
  const { turns } = p.sessions;
  const batch = p.config.turn.recoveryScanBatch;
  const candidates = new Map<string, string>();
  const orphans = new Set<string>();
  const runPage = await turns.runsPage(cursor.runs, batch);
  const pendingPage = await turns.pendingPage(cursor.pending, batch);
  cursor.runs = runPage.next;
  cursor.pending = pendingPage.next;
  for (const r of runPage.docs) {
    candidates.set(r._id, r.tenant_id);
    if (!r.rescheduled_at) orphans.add(r._id);
  }
  for (const s of pendingPage.docs) candidates.set(s._id, s.tenant_id);
  for (const [sid, tenant] of candidates) {
    if (busyHere(sid)) continue;
    if (await p.coordination.leases.holder(`session:${sid}`)) continue;
    if (orphans.has(sid)) await announceRescheduled(p, tenant, sid, owner);
    await p.bus.publish('session.turn.requested', {
      tenant_id: tenant,
      session_id: sid,
      seq: 0,
      reason: 'recovery',
    });
  }
}

/**
 * Under the session lease (so no worker resumes the turn meanwhile, and the dead worker's
 * late writes are fenced off): appends session.status_rescheduled for a live orphaned run, then
 * marks the run record. The lease is released before the turn command is published.
 */
async function announceRescheduled(
  p: RecoveryServices,
  tenant: string,
  sid: string,
  owner: string,
) {
  const key = `session:${sid}`;
  const lease = await p.coordination.leases.acquire(key, owner, p.config.turn.leaseTtlMs);
  if (!lease) return;
  try {
    const { turns } = p.sessions;
    const [s, run] = await Promise.all([turns.session(tenant, sid), turns.run(tenant, sid)]);
    if (!s || s.deleted_at || s.terminated_at || !run || run.rescheduled_at) return;
    if (runIsLive(s, run) !== true) return;
    // Past the recovery limit the next worker forces the session idle: nothing is rescheduled.
    if (s.recoveries >= p.config.turn.maxRecoveries) return;
    await p.turnState.fence(tenant, sid, lease.token);
    await p.events.append(tenant, sid, [{ type: 'session.status_rescheduled', payload: {} }], {
      fence: lease.token,
    });
    await turns.markRescheduled(tenant, sid, run.run_id);
  } finally {
    await p.coordination.leases.release(lease);
  }
}
