/**
 * One model request of a turn: builds the request from the session's agent, its history and the
 * turn's MCP tools (../tools/mcp.ts), streams
 * the response into events, and retries retryable failures. Guarantees: every attempt is one
 * span (span.model_request_start ... span.model_request_end) and its events and usage are
 * appended together, fenced by the session lease; a failure appends session.error (retrying,
 * exhausted or terminal) and at most MODEL_ATTEMPTS attempts are made, with backoff; an abort
 * closes the open span and rethrows the abort reason. A harness `pi` session's request goes
 * through its context compaction (./compaction/turnCompaction.ts): the history is rebuilt from
 * the last compaction boundary, and a context overflow is not a session.error but one compaction
 * and retry (then compaction_limit_reached_error).
 * Proven by test/e2e/sdk/sdk-flow.test.ts and test/e2e/sessions/sessions-events.test.ts (scripted model errors);
 * harness `pi` by test/e2e/turns/compaction.test.ts and test/e2e/turns/compaction-overflow.test.ts.
 */
import { backoffDelay, sleep, type SessionDoc } from '@agentfleet/core';
import type { WorkerServices } from '../services.js';
import type { buildHistory } from './history.js';
import { consumeModelStream } from './modelStream.js';
import type { AppendFenced, McpTools, ToolCall } from './types.js';
import { usageUpdate } from './budget.js';
import { recordCall } from './ledger.js';
import { providerRequest } from './modelSettings.js';
import {
  sessionError,
  spanEnd,
  toModelError,
  zeroUsage,
  type HeldAnswer,
  type TurnEnd,
} from './events.js';
import { isContextOverflow } from './compaction/overflow.js';
import { TurnCompaction } from './compaction/turnCompaction.js';

export const MODEL_ATTEMPTS = 3;

/** What one model call's attempts use: the model, the turn settings, live events, metrics. */
export type AttemptServices = Pick<
  WorkerServices,
  'config' | 'events' | 'metrics' | 'models' | 'cost'
>;
/** What a model request uses (harness `pi`: its compaction reads the log, files and budget too). */
export type ModelServices = AttemptServices & Pick<WorkerServices, 'files' | 'sessions'>;

/** `stopped`: the turn ends with `end` (harness `pi`: a compaction summary call reached the budget). */
export type ModelOutcome =
  | { kind: 'ok'; stop: string; toolUses: ToolCall[]; held?: HeldAnswer }
  | { kind: 'error'; exhausted: boolean }
  | { kind: 'stopped'; end: TurnEnd };
/** Harness `pi` only: the provider said the request exceeds its context window. */
export type AttemptOutcome = ModelOutcome | { kind: 'overflow' };

/**
 * Harness `pi` (workers/src/turn/compaction/turnCompaction.ts): the request carries the session id
 * and is not trimmed; a context overflow is returned (`'return'`: the caller compacts and
 * retries once) or reported as the terminal session.error compaction_limit_reached_error
 * (`'limit'`: the retry overflowed too).
 */
export interface PiRequestOptions {
  sessionId: string;
  onOverflow: 'return' | 'limit';
}

/**
 * One model call with streaming, retried on retryable errors; appends the canonical events. A
 * harness `pi` session's call goes through its context compaction, which sends the history
 * rebuilt from the session's last compaction boundary instead of `history`
 * (./compaction/turnCompaction.ts). `holdFinal`: a final answer (no tool call to run) is not
 * appended but returned as `held`, for the turn's idle write (./finish.ts).
 */
export async function modelRequest(
  p: ModelServices,
  tenant: string,
  s: SessionDoc,
  append: AppendFenced,
  history: ReturnType<typeof buildHistory>,
  signal: AbortSignal,
  mcp?: Pick<McpTools, 'specs' | 'lookup'>,
  holdFinal = false,
): Promise<ModelOutcome> {
  if (s.agent.harness === 'pi')
    return new TurnCompaction(p, tenant, s, append, signal).request(mcp, holdFinal);
  return (await modelAttempts(p, tenant, s, append, history, signal, mcp, {
    holdFinal,
  })) as ModelOutcome;
}

/** A model answer that ends the turn: no tool call to run. */
export const isFinalAnswer = (stop: string, toolUses: readonly unknown[]) =>
  stop !== 'tool_use' || !toolUses.length;

/**
 * The attempts of one model call (see the file header); `pi` set for harness `pi` sessions,
 * `holdFinal` as in modelRequest.
 */
export async function modelAttempts(
  p: AttemptServices,
  tenant: string,
  s: SessionDoc,
  append: AppendFenced,
  history: ReturnType<typeof buildHistory>,
  signal: AbortSignal,
  mcp?: Pick<McpTools, 'specs' | 'lookup'>,
  { pi, holdFinal = false }: { pi?: PiRequestOptions; holdFinal?: boolean } = {},
): Promise<AttemptOutcome> {
  const sid = s._id;
  for (let attempt = 1; ; attempt++) {
    // The model card is read once, for the provider and the list price, while the span start is
    // written; a failed read surfaces below, inside the span.
    const resolving = p.models.resolve(tenant, s.agent.model);
    resolving.catch(() => {});
    const [start] = await append([{ type: 'span.model_request_start', payload: {} }]);
    try {
      const resolved = await resolving;
      // Effort normalised and pi_config applied (max tokens, headers, context window).
      const stream = resolved.provider.stream(
        providerRequest(
          resolved,
          s.agent,
          history,
          p.config.turn.maxTokens,
          signal,
          mcp?.specs,
          pi ? { sessionId: pi.sessionId } : undefined,
        ),
      );
      const t0 = performance.now();
      const r = await consumeModelStream(
        stream,
        signal,
        s.agent.tools as any[],
        (type, payload) => p.events.publishLive(sid, { type, ...payload }),
        mcp,
      );
      p.metrics.modelDuration.observe((performance.now() - t0) / 1000, {
        protocol: resolved.protocol,
      });
      p.metrics.modelRequests.inc({ protocol: resolved.protocol, outcome: 'ok' });
      await recordCall(p, tenant, s, resolved, r.usage, 'turn');
      // The list cost moves with the token usage, in the update that appends these events.
      const held: HeldAnswer = {
        drafts: [...r.drafts, spanEnd(start!._id, false, r.usage, r.stop, s.agent.model.speed)],
        update: await usageUpdate(p, tenant, s.agent.model.id, r.usage, resolved.listPrice),
      };
      if (holdFinal && isFinalAnswer(r.stop, r.toolUses))
        return { kind: 'ok', stop: r.stop, toolUses: r.toolUses, held };
      await append(held.drafts, held.update);
      return { kind: 'ok', stop: r.stop, toolUses: r.toolUses };
    } catch (err) {
      if (signal.aborted) {
        await append([spanEnd(start!._id, true, zeroUsage(), 'aborted')]).catch(() => {});
        throw signal.reason;
      }
      const me = toModelError(err);
      p.metrics.modelRequests.inc({ protocol: 'any', outcome: me.kind });
      if (pi && isContextOverflow(me)) {
        if (pi.onOverflow === 'return') {
          await append([spanEnd(start!._id, true, zeroUsage(), 'error')]);
          return { kind: 'overflow' };
        }
        await append([
          spanEnd(start!._id, true, zeroUsage(), 'error'),
          sessionError(
            'compaction_limit_reached_error',
            `the request still exceeds the model's context window after compaction: ${me.message}`,
            'terminal',
          ),
        ]);
        return { kind: 'error', exhausted: false };
      }
      const retry = me.retryable && attempt < MODEL_ATTEMPTS;
      await append([
        spanEnd(start!._id, true, zeroUsage(), 'error'),
        sessionError(
          me.kind,
          me.message,
          retry ? 'retrying' : me.retryable ? 'exhausted' : 'terminal',
        ),
      ]);
      if (!retry) return { kind: 'error', exhausted: me.retryable };
      await sleep(backoffDelay(attempt, 250, 4_000), signal);
    }
  }
}
