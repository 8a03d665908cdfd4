/**
 * The outcome evaluation cycle of a turn (SDK `user.define_outcome`, core/src/outcomes). After
 * the agent's work ends a turn with `end_turn`, the session's active outcome (defined in this
 * turn's input or earlier) is judged by a grader in a separate context: its own model call
 * (the session's model card) with the grader's system prompt, the outcome, the rubric and the
 * evidence of the cycle: messages, tool results and the outputs directory's files
 * (core/src/outcomes/grader.ts, ./outcomeOutputs.ts).
 *
 * Guarantees (test/e2e/turns/outcomes.test.ts):
 * - while the grader's call runs, `span.outcome_evaluation_ongoing {outcome_id, iteration}`
 *   every OUTCOME_HEARTBEAT_MS, all before the cycle's end;
 * - each cycle is `span.outcome_evaluation_start {outcome_id, iteration}` then
 *   `span.outcome_evaluation_end {outcome_evaluation_start_id, outcome_id, iteration, result,
 *   explanation, usage}`; the session's outcome state (`outcome_evaluations`) moves in the same
 *   appends: `evaluating` during the grader's call, then `running` (needs_revision: the agent
 *   works again, with the grader's explanation as its next user message) or a terminal result;
 * - `needs_revision` on the last allowed cycle (`max_iterations`, default 3) ends the outcome
 *   `max_iterations_reached`, and one final turn of the agent follows (it acknowledges) with no
 *   further evaluation; `satisfied` and `failed` end it at once;
 * - the grader's usage counts in the session's usage and list cost (the same session update as
 *   its span end) and in the cost ledger as kind `grader`; a session whose budget is reached is
 *   not graded (`failed`, saying so);
 * - a grader call that answered (its usage counted) gets one `aux.model_call` (kind `grader`,
 *   its outcome_id, iteration and start id), in the same append as its span end
 *   (./ledger.ts auxModelCall; test/e2e/turns/aux-model-call.test.ts); a failed or interrupted
 *   call, whose usage the session does not count, gets none;
 * - an interrupt during the grader's call ends the cycle and the outcome `interrupted`; a
 *   grader model error is retried (retryable errors, 3 attempts) and then fails the outcome
 *   with the error's message; an unreadable verdict fails it, never satisfies it;
 * - a worker that dies mid-evaluation leaves the outcome `evaluating`: the recovered turn
 *   resumes that evaluation (the same start event) before asking the agent anything, so a
 *   finished cycle is never run twice.
 */
import {
  activeOutcome,
  askModel,
  backoffDelay,
  graderMessages,
  nowIso,
  parseVerdict,
  sleep,
  type EvaluationResult,
  type EventDoc,
  type EventDraft,
  type Logger,
  type ModelUsage,
  type OutcomeState,
  type SandboxManager,
  type SessionDoc,
} from '@agentfleet/core';
import type { WorkerServices } from '../services.js';
import { budgetStop, usageUpdate, type UsageUpdate } from './budget.js';
import { toModelError, zeroUsage, TurnAborted } from './events.js';
import { auxModelCall, recordCall } from './ledger.js';
import { outputEvidence } from './outcomeOutputs.js';
import type { AppendFenced } from './types.js';

export type OutcomeServices = Pick<WorkerServices, 'models' | 'sessions' | 'cost' | 'config'>;

const GRADER_MAX_TOKENS = 2048;
const GRADER_ATTEMPTS = 3;

/** What the turn does after a cycle: the agent revises, acknowledges, or the turn ends. */
export type CycleNext = 'revise' | 'acknowledge' | 'done';

/** The outcome a turn with input up to `inputTo` must judge now, or null. */
export function outcomeToJudge(
  s: Pick<SessionDoc, 'outcomes'> | null,
  inputTo: number,
): OutcomeState | null {
  const o = activeOutcome(s?.outcomes);
  return o && o.defined_seq <= inputTo ? o : null;
}

/** The evidence of the cycle: the agent's messages and tool results after `fromSeq`. */
function evidenceOf(log: readonly EventDoc[], fromSeq: number) {
  const out: Array<{ kind: 'message' | 'tool_result'; text: string }> = [];
  for (const e of log) {
    if (e.seq <= fromSeq) continue;
    const blocks = (e.payload.content ?? []) as Array<{ type?: string; text?: unknown }>;
    const text = blocks
      .filter((b) => b?.type === 'text' && typeof b.text === 'string')
      .map((b) => b.text as string)
      .join('\n');
    if (!text) continue;
    if (e.type === 'agent.message') out.push({ kind: 'message', text });
    else if (e.type === 'agent.tool_result' || e.type === 'agent.mcp_tool_result')
      out.push({ kind: 'tool_result', text });
  }
  return out;
}

/** Where the cycle's evidence starts, and the cycle's start event if one is open (a crash). */
function cycleOf(log: readonly EventDoc[], o: OutcomeState) {
  let from = o.defined_seq;
  let open: EventDoc | null = null;
  for (const e of log) {
    if (e.payload.outcome_id !== o.outcome_id) continue;
    if (e.type === 'span.outcome_evaluation_start') open = e;
    if (e.type === 'span.outcome_evaluation_end') {
      from = e.seq;
      open = null;
    }
  }
  return { from, open };
}

const stateSet = (o: OutcomeState, set: Partial<OutcomeState>) =>
  Object.fromEntries(Object.entries(set).map(([k, v]) => [`outcomes.${o.outcome_id}.${k}`, v]));

/**
 * Appends `beat()` every `everyMs` until stopped; `stop()` waits for a beat in flight, so the
 * cycle's end is always after its last heartbeat. A failed beat is dropped (the next may land).
 */
function heartbeat(everyMs: number, beat: () => Promise<unknown>) {
  let inFlight: Promise<unknown> | null = null;
  const timer = setInterval(() => {
    if (!inFlight)
      inFlight = beat()
        .catch(() => undefined)
        .finally(() => (inFlight = null));
  }, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await inFlight;
    },
  };
}

/** One evaluation cycle of the session's active outcome (see the file comment). */
export async function evaluateOutcome(
  p: OutcomeServices,
  tenant: string,
  s: SessionDoc,
  o: OutcomeState,
  append: AppendFenced,
  readLog: () => Promise<readonly EventDoc[]>,
  signal: AbortSignal,
  log: Logger,
  sandbox: SandboxManager | null,
): Promise<CycleNext> {
  const events = await readLog();
  const cycle = cycleOf(events, o);
  let startId = cycle.open?._id;
  const evidenceFrom = cycle.from;
  if (!startId) {
    // The evidence is what the agent did since the last cycle ended (or the outcome was defined).
    const [start] = await append(
      [
        {
          type: 'span.outcome_evaluation_start',
          payload: { outcome_id: o.outcome_id, iteration: o.iteration },
        },
      ],
      { $set: stateSet(o, { result: 'evaluating' }) },
    );
    startId = start!._id;
  }
  const end = async (
    result: EvaluationResult,
    explanation: string,
    usage: ModelUsage,
    counted?: { update: UsageUpdate; aux: EventDraft },
  ): Promise<void> => {
    const usageUpd = counted?.update;
    const terminal = result !== 'needs_revision';
    const next = terminal
      ? { result, explanation, completed_at: nowIso() }
      : { result: 'running', explanation, iteration: o.iteration + 1 };
    await append(
      [
        {
          type: 'span.outcome_evaluation_end',
          payload: {
            outcome_evaluation_start_id: startId,
            outcome_id: o.outcome_id,
            iteration: o.iteration,
            result,
            explanation,
            usage,
          },
        },
        ...(counted ? [counted.aux] : []),
      ],
      {
        ...(usageUpd ? { $inc: usageUpd.$inc } : {}),
        $set: { ...(usageUpd?.$set ?? {}), ...stateSet(o, next as Partial<OutcomeState>) },
      },
    );
  };

  if (await budgetStop(p, tenant, s._id)) {
    await end(
      'failed',
      "the session's budget is reached: the outcome was not evaluated",
      zeroUsage(),
    );
    return 'done';
  }
  const files = await outputEvidence(sandbox, tenant, s);
  const request = graderMessages(o, [...evidenceOf(events, evidenceFrom), ...files]);
  let usage = zeroUsage();
  let text = '';
  let resolved;
  let startedAt = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      resolved = await p.models.resolve(tenant, s.agent.model);
      usage = zeroUsage();
      startedAt = performance.now();
      const beats = heartbeat(p.config.turn.outcomeHeartbeatMs, () =>
        append([
          {
            type: 'span.outcome_evaluation_ongoing',
            payload: { outcome_id: o.outcome_id, iteration: o.iteration },
          },
        ]),
      );
      try {
        text = await askModel(
          resolved.provider,
          { model: resolved.wireModel, ...request, maxTokens: GRADER_MAX_TOKENS, signal },
          (u) => (usage = u),
        );
      } finally {
        await beats.stop();
      }
      break;
    } catch (err) {
      if (signal.aborted) {
        const reason = (signal.reason as TurnAborted)?.reason;
        if (reason === 'interrupt')
          await end('interrupted', 'the user interrupted the evaluation', usage);
        throw signal.reason;
      }
      const me = toModelError(err);
      if (me.retryable && attempt < GRADER_ATTEMPTS) {
        await sleep(backoffDelay(attempt, 250, 4_000), signal);
        continue;
      }
      log.warn('outcome grader failed', { session_id: s._id, kind: me.kind });
      await end('failed', `the grader's model request failed: ${me.message}`, usage);
      return 'done';
    }
  }
  const durationMs = performance.now() - startedAt;
  await recordCall(p, tenant, s, resolved, usage, 'grader', log);
  const priced = {
    update: await usageUpdate(p, tenant, s.agent.model.id, usage, resolved.listPrice),
    aux: auxModelCall({
      kind: 'grader',
      s,
      resolved,
      usage,
      price: resolved.listPrice,
      durationMs,
      refs: {
        outcome_id: o.outcome_id,
        outcome_evaluation_start_id: startId,
        iteration: o.iteration,
      },
    }),
  };
  const verdict = parseVerdict(text);
  if (verdict.result !== 'needs_revision') {
    await end(verdict.result, verdict.explanation, usage, priced);
    return 'done';
  }
  if (o.iteration + 1 >= o.max_iterations) {
    await end('max_iterations_reached', verdict.explanation, usage, priced);
    return 'acknowledge';
  }
  await end('needs_revision', verdict.explanation, usage, priced);
  return 'revise';
}
