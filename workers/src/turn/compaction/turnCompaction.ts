/**
 * Harness-owned context compaction for agents with `harness: 'pi'` (spec "Compaction metadata
 * (harness `pi`)"): each model request of such a session goes through `request`. Guarantees:
 * - threshold: when the request's estimated input (system, tools, history; conservative, see
 *   ../modelSettings.ts) exceeds `compaction_trigger_fraction` × the card's
 *   `pi_config.contextWindow`, the conversation is compacted before the request is sent, when
 *   a compaction can shrink it: not when nothing was added since the last boundary, not twice in
 *   one turn, not on a first turn (a boundary keeps the running turn's input and work whole).
 *   A card without a contextWindow compacts on overflow only;
 * - overflow: a provider context-overflow answer (./overflow.ts, both protocols) compacts and
 *   retries the request once; the turn goes on. A request still over the window after
 *   compaction (estimated, or the retry overflowing again) ends the turn with the terminal
 *   session.error `compaction_limit_reached_error`; the session stays usable;
 * - a compaction appends span.compaction_summarize_start, then span.compaction_summarize_end
 *   with the boundary event agent.thread_context_compacted (summary, strategy, trigger) in one
 *   fenced append; the history sent afterwards is rebuilt from that boundary
 *   (./boundaryHistory.ts), also after a worker restart;
 * - fallback: when the summary call fails, returns no text or calls a tool (a tool call rejects
 *   the boundary), the platform writes the boundary itself with strategy `truncate`: the newest
 *   messages that fit the summary cap, verbatim, oldest dropped (./summaryPayload.ts
 *   fallbackSummary);
 * - the summary call is a model request of the session: its usage goes on its span end and, in
 *   the same fenced append, into the session's usage and list cost, priced like the turn's
 *   requests (../budget.ts usageUpdate; the budget's crash repair counts these span ends too);
 *   a summary call that answered (a tool call or an empty answer included: its usage counts)
 *   also gets one `aux.model_call` (kind `compaction`, its span's start id) in that same
 *   append (../ledger.ts auxModelCall; test/e2e/turns/aux-model-call.test.ts); a call that
 *   threw or was interrupted counts nothing and gets none;
 * - budget: before the summary call the session's budget is checked as before any request;
 *   reached → no summary call, no span, no boundary, the turn ends with `budget_reached`. After
 *   the boundary it is checked again: a summary call that reached it ends the turn with
 *   `budget_reached` before the main request (the boundary stays; the next turn after a raise
 *   starts from it). A failed summary call (truncate fallback) counts whatever usage it reported.
 * Default-harness sessions never reach this file. Proved by test/e2e/turns/compaction.test.ts,
 * test/e2e/turns/compaction-overflow.test.ts and test/e2e/turns/compaction-usage.test.ts.
 */
import {
  compactionSettings,
  DEFAULT_MAX_SUMMARY_TOKENS,
  DEFAULT_TRIGGER_FRACTION,
  type ChatMessage,
  type CompactionSettings,
  type EventDoc,
  type ModelRequest,
  type ModelStreamEvent,
  type ModelUsage,
  type ResolvedModel,
  type SessionDoc,
} from '@agentfleet/core';
import { estimateRequestTokens, providerRequest } from '../modelSettings.js';
import {
  modelAttempts,
  type ModelOutcome,
  type ModelServices,
  type PiRequestOptions,
} from '../modelRequest.js';
import { resolveFileBlocks } from '../fileBlocks.js';
import { sessionError, toModelError, zeroUsage } from '../events.js';
import { budgetStop, usageUpdate } from '../budget.js';
import { auxModelCall, recordCall } from '../ledger.js';
import type { AppendFenced, McpTools } from '../types.js';
import { BOUNDARY_EVENT, boundaryHistory, INPUT_TYPES, lastRunBefore } from './boundaryHistory.js';
import { fallbackSummary, summaryRequest } from './summaryPayload.js';

export type Trigger = 'threshold' | 'overflow';

/** Events that add to the conversation; none after the newest boundary = nothing to compact. */
const CONVERSATION_TYPES = new Set([
  'user.message',
  'user.custom_tool_result',
  'user.tool_result',
  'system.message',
  'agent.message',
  'agent.tool_use',
  'agent.tool_result',
  'agent.mcp_tool_use',
  'agent.mcp_tool_result',
  'agent.custom_tool_use',
]);

/**
 * Whether a threshold compaction could shrink the request: only when there is conversation after
 * the newest boundary that a compaction summarises, i.e. before the running turn (the turn's own
 * input and work are kept whole, ./boundaryHistory.ts). So no compaction when nothing was added
 * since the last boundary, when the running turn compacted already, or on the first turn.
 */
function nothingToCompact(events: EventDoc[]): boolean {
  const run = lastRunBefore(events, events.length);
  for (let i = events.length - 1; i > run; i--) if (events[i]!.type === BOUNDARY_EVENT) return true; // written in the running turn
  const prevRun = lastRunBefore(events, run);
  for (let i = run - 1; i >= 0; i--) {
    const t = events[i]!.type;
    if (t === BOUNDARY_EVENT) return true;
    if (CONVERSATION_TYPES.has(t) && !(i > prevRun && INPUT_TYPES.has(t))) return false;
  }
  return true;
}

/** The settings a stored agent runs with; a value that no longer validates gets the default. */
function settingsOf(s: SessionDoc): CompactionSettings {
  try {
    return compactionSettings(s.agent.metadata);
  } catch {
    return {
      strategy: 'cc-style',
      triggerFraction: DEFAULT_TRIGGER_FRACTION,
      maxSummaryTokens: DEFAULT_MAX_SUMMARY_TOKENS,
    };
  }
}

export class TurnCompaction {
  readonly settings: CompactionSettings;

  constructor(
    private readonly p: ModelServices,
    private readonly tenant: string,
    private readonly s: SessionDoc,
    private readonly append: AppendFenced,
    private readonly signal: AbortSignal,
  ) {
    this.settings = settingsOf(s);
  }

  /** The session's events and the history sent from them (boundary applied, file blocks resolved). */
  private async load(): Promise<{ events: EventDoc[]; history: ChatMessage[] }> {
    const events = await this.p.events.all(this.tenant, this.s._id);
    const history = await resolveFileBlocks(this.p.files, this.tenant, boundaryHistory(events));
    return { events, history };
  }

  /**
   * One model request of the turn, compacting first or on overflow (see the file header);
   * `holdFinal` as in modelRequest (../modelRequest.ts).
   */
  async request(
    mcp?: Pick<McpTools, 'specs' | 'lookup'>,
    holdFinal = false,
  ): Promise<ModelOutcome> {
    const load = () => this.load();
    const { p, s, signal } = this;
    const sessionId = s._id;
    const attempts = (history: ChatMessage[], onOverflow: PiRequestOptions['onOverflow']) =>
      modelAttempts(p, this.tenant, s, this.append, history, signal, mcp, {
        pi: { sessionId, onOverflow },
        holdFinal,
      });
    let resolved: ResolvedModel;
    try {
      resolved = await p.models.resolve(this.tenant, s.agent.model);
    } catch {
      // modelRequest reports the failure as the session.error it is.
      const { history } = await load();
      const out = await attempts(history, 'limit');
      return out.kind === 'overflow' ? { kind: 'error', exhausted: false } : out;
    }
    const mainRequest = (history: ChatMessage[]) =>
      providerRequest(resolved, s.agent, history, p.config.turn.maxTokens, signal, mcp?.specs, {
        sessionId,
      });
    const estimate = (r: ModelRequest) => estimateRequestTokens(r.system, r.tools, r.messages);
    const cw = resolved.piConfig?.contextWindow;
    const window = Number.isInteger(cw) && (cw as number) > 0 ? (cw as number) : undefined;
    let { events, history } = await load();
    if (window !== undefined) {
      let used = estimate(mainRequest(history));
      if (used > this.settings.triggerFraction * window && !nothingToCompact(events)) {
        const stopped = await this.compact(
          'threshold',
          resolved,
          mainRequest(history),
          used,
          window,
        );
        if (stopped) return stopped;
        ({ events, history } = await load());
        used = estimate(mainRequest(history));
      }
      if (used >= window) {
        await this.append([
          sessionError(
            'compaction_limit_reached_error',
            `the request needs about ${used} tokens after compaction, more than the model's context window of ${window} (pi_config.contextWindow)`,
            'terminal',
          ),
        ]);
        return { kind: 'error', exhausted: false };
      }
    }
    const first = await attempts(history, 'return');
    if (first.kind !== 'overflow') return first;
    const stopped = await this.compact(
      'overflow',
      resolved,
      mainRequest(history),
      estimate(mainRequest(history)),
      window,
    );
    if (stopped) return stopped;
    ({ history } = await load());
    const retry = await attempts(history, 'limit');
    return retry.kind === 'overflow' ? { kind: 'error', exhausted: false } : retry;
  }

  /**
   * Summarises (or, failing that, truncates) and appends the boundary with the summary call's
   * usage; answers `stopped` when the budget allows no summary call or no request after it.
   */
  private async compact(
    trigger: Trigger,
    resolved: ResolvedModel,
    main: ModelRequest,
    tokensBefore: number,
    window: number | undefined,
  ): Promise<ModelOutcome | null> {
    const { settings, signal } = this;
    const before = await budgetStop(this.p, this.tenant, this.s._id);
    if (before) return { kind: 'stopped', end: before };
    const [start] = await this.append([
      {
        type: 'span.compaction_summarize_start',
        payload: { strategy: settings.strategy, trigger },
      },
    ]);
    let summary: string | null = null;
    let fallbackReason: string | null = null;
    let usage = zeroUsage();
    let answered = false;
    let durationMs = 0;
    try {
      const cardMax = resolved.piConfig?.maxTokens;
      const req = summaryRequest(
        settings,
        main,
        window,
        `${this.s._id}:compaction:${start!._id}`,
        Number.isInteger(cardMax) ? (cardMax as number) : undefined,
      );
      const startedAt = performance.now();
      const r = await collectSummary(resolved.provider.stream(req), signal);
      durationMs = performance.now() - startedAt;
      usage = r.usage;
      answered = true;
      await recordCall(this.p, this.tenant, this.s, resolved, usage, 'compaction');
      if (r.toolCalled) fallbackReason = 'the summary call returned a tool call';
      else if (!r.text.trim()) fallbackReason = 'the summary call returned no text';
      else summary = r.text.trim();
    } catch (err) {
      if (signal.aborted) {
        await this.append([spanEnd(start!._id, true, usage)]).catch(() => {});
        throw signal.reason;
      }
      fallbackReason = `summarising failed: ${toModelError(err).message}`;
    }
    // The usage moves with the span end that records it (a call that threw reported none).
    const update = answered
      ? await usageUpdate(this.p, this.tenant, this.s.agent.model.id, usage, resolved.listPrice)
      : undefined;
    await this.append(
      [
        spanEnd(start!._id, summary === null, usage),
        ...(answered
          ? [
              auxModelCall({
                kind: 'compaction',
                s: this.s,
                resolved,
                usage,
                price: resolved.listPrice,
                durationMs,
                refs: { compaction_summarize_start_id: start!._id },
              }),
            ]
          : []),
        {
          type: BOUNDARY_EVENT,
          payload: {
            summary: summary ?? fallbackSummary(main.messages, settings.maxSummaryTokens),
            strategy: summary === null ? 'truncate' : settings.strategy,
            trigger,
            fallback_reason: fallbackReason,
            estimated_tokens_before: tokensBefore,
          },
        },
      ],
      update,
    );
    const after = await budgetStop(this.p, this.tenant, this.s._id);
    return after ? { kind: 'stopped', end: after } : null;
  }
}

const spanEnd = (startId: string, isError: boolean, usage: ModelUsage) => ({
  type: 'span.compaction_summarize_end',
  payload: { compaction_summarize_start_id: startId, is_error: isError, model_usage: usage },
});

/** Reads a summary response: its text, whether it called a tool, and its usage. */
async function collectSummary(stream: AsyncIterable<ModelStreamEvent>, signal: AbortSignal) {
  const texts: string[] = [];
  let toolCalled = false;
  let usage = zeroUsage();
  for await (const ev of stream) {
    if (signal.aborted) throw signal.reason;
    if (ev.type === 'text_end') texts.push(ev.text);
    else if (ev.type === 'tool_use_end') toolCalled = true;
    else if (ev.type === 'message_end') usage = ev.usage;
  }
  return { text: texts.join('\n'), toolCalled, usage };
}
