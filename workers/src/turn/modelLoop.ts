/**
 * The agent's model loop within a turn: settles calls held for confirmation by an earlier turn,
 * inlines the pinned skills and the memory prompt, clones repository resources before the model
 * is first asked, then alternates model requests (./modelRequest.ts) and tool dispatch under the
 * permission policies (../tools/permissions.ts) until a final answer, a call that waits for the
 * client (requires_action), the budget (./budget.ts) or `config.turn.maxModelRequests`. The
 * history is re-read only after the turn appended, so input sent meanwhile enters at the next
 * turn (./history.ts). Called by the turn runner (./runner.ts) for the agent's work and for each
 * revision an outcome's grader asks for (./outcome.ts).
 */
import { sessionOf } from '@agentfleet/core';
import type { Lease, SandboxManager, SessionDoc } from '@agentfleet/core';
import type { TurnServices } from '../services.js';
import type { ToolExecutor } from '../tools/executor.js';
import type { McpTurn } from '../tools/mcp.js';
import { ToolCallDispatcher } from '../tools/permissions.js';
import { SelfHostedLane } from '../tools/selfHosted.js';
import type { SessionAppends } from './appends.js';
import { budgetStop } from './budget.js';
import { sessionError, type TurnEnd } from './events.js';
import { resolveFileBlocks } from './fileBlocks.js';
import { answerMayWaitForIdle } from './finish.js';
import { withMemoryPrompt } from './memory.js';
import { isFinalAnswer, modelRequest } from './modelRequest.js';
import { repositoriesReady } from './repositories.js';
import type { SessionLogCache } from './sessionLogCache.js';
import { SkillLoadError, withSkillPrompt } from './skillPrompt.js';
import type { Coordinator } from './threads.js';

/** What the loop uses of the runner: its services, appends, log cache, tools and sandbox. */
export interface ModelLoopDeps {
  readonly p: TurnServices;
  readonly appends: SessionAppends;
  readonly logs: SessionLogCache;
  readonly tools: ToolExecutor;
  /** Null for a self_hosted session (the customer's worker is its sandbox) or no driver. */
  readonly sandbox: SandboxManager | null;
}

export async function modelLoop(
  d: ModelLoopDeps,
  tenant: string,
  s: SessionDoc,
  lease: Lease,
  signal: AbortSignal,
  mcp: McpTurn,
  inputTo: number,
  /** A coordinator session's primary thread: its thread tools (./threads.ts). */
  coordinator?: Coordinator,
): Promise<TurnEnd> {
  const sid = s._id;
  // A child thread runs in its session's sandbox (core/src/threads).
  const session = { tenantId: tenant, sessionId: sessionOf(s), environmentId: s.environment_id };
  const lane = SelfHostedLane.of(s);
  const append = d.appends.fenced(tenant, sid, lease);
  const calls = new ToolCallDispatcher(
    s.agent.tools as any[],
    d.tools,
    { session, signal },
    append,
    mcp,
    lane,
    coordinator,
  );
  // Calls held for confirmation by an earlier turn are settled before the model sees them.
  // Every event up to the turn's own last append (status_running); see sessionLogCache.ts.
  let logAt = d.appends.lastSeq(sid);
  let log = await d.logs.all(tenant, sid, logAt);
  // A cloud session's calls settled long ago are not scanned again (./openCalls.ts).
  const from = lane ? 0 : d.logs.settleFrom(tenant, sid, log);
  const held = await calls.settleHeld(from ? log.slice(from) : log, lane ? inputTo : Infinity);
  if (held.length) return { stop_reason: { type: 'requires_action', event_ids: held } };
  // The pinned skills' SKILL.md bodies, inlined into the system prompt (./skillPrompt.ts).
  const prompted = await withSkillPrompt(d.p, tenant, s).catch(async (err) => {
    if (!(err instanceof SkillLoadError)) throw err;
    await append([sessionError('unknown_error', err.message, 'terminal')]);
    return null;
  });
  if (!prompted) return { stop_reason: { type: 'end_turn' } };
  // Repository resources are cloned before the model is first asked (./repositories.ts).
  const repoFailure = lane ? null : await repositoriesReady(d.sandbox, session, s);
  if (repoFailure) {
    await append([repoFailure]);
    return { stop_reason: { type: 'end_turn' } };
  }
  const withMemory = withMemoryPrompt(prompted, !!d.sandbox && !lane);
  await mcp.ready();
  const atomic = await d.p.events.appendsAtomically(tenant);
  for (let i = 0; i < d.p.config.turn.maxModelRequests; i++) {
    if (signal.aborted) throw signal.reason;
    // The first request checks the session the turn started from (read moments ago).
    const overBudget = await budgetStop(d.p, tenant, sid, i === 0 ? s : undefined);
    if (overBudget) return overBudget;
    // Re-read only after this turn appended: others' input enters at the next turn (history.ts).
    if (d.appends.lastSeq(sid) !== logAt) {
      logAt = d.appends.lastSeq(sid);
      log = await d.logs.all(tenant, sid, logAt);
    }
    const history = await resolveFileBlocks(d.p.files, tenant, d.logs.history(tenant, sid, log));
    const outcome = await modelRequest(
      d.p,
      tenant,
      withMemory,
      d.appends.fenced(tenant, sid, lease),
      history,
      signal,
      mcp,
      answerMayWaitForIdle(d.sandbox, session.sessionId, mcp.connected, atomic),
    );
    if (outcome.kind === 'error')
      return { stop_reason: { type: outcome.exhausted ? 'retries_exhausted' : 'end_turn' } };
    if (outcome.kind === 'stopped') return outcome.end;
    if (isFinalAnswer(outcome.stop, outcome.toolUses)) {
      const type = outcome.stop === 'refusal' ? 'refusal' : 'end_turn';
      return { stop_reason: { type }, held: outcome.held };
    }
    // Calls allowed by policy run now; held and client-executed ones end with requires_action.
    const waiting = await calls.dispatch(outcome.toolUses);
    if (waiting.length) return { stop_reason: { type: 'requires_action', event_ids: waiting } };
  }
  return { stop_reason: { type: 'end_turn' }, interrupted: false };
}
