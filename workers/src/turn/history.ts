import { aboutAThread, type ChatMessage, type ContentBlock, type EventDoc } from '@agentfleet/core';

/**
 * Rebuilds the model conversation from canonical events. User input enters the conversation
 * at the turn that consumed it (the next session.status_running), not where it was appended:
 * messages sent during a turn belong after that turn's reply. A `system.message` enters right
 * after the user input it accompanied, as a `system` message (each adapter maps it for its
 * protocol; see ChatMessage). Tool calls use the agent.tool_use event id as the tool id, so a
 * tool_use and its tool_result pair up across restarts; an agent.mcp_tool_use (name
 * `mcp__<server>__<tool>`) and its agent.mcp_tool_result pair the same way; a self-hosted
 * worker's user.tool_result answers its agent.tool_use like a user.custom_tool_result, at the
 * head of the next user turn (a search_result block reaches the model as text). File-sourced image and document blocks
 * are left as they are: workers/src/turn/fileBlocks.ts resolves them before the request.
 * A `user.define_outcome` enters like a user message (the outcome and its rubric); a
 * span.outcome_evaluation_end that sends the agent back (needs_revision, or the last
 * max_iterations_reached) is a user message with the grader's explanation, right after the
 * answer it judged (./outcome.ts). A `user.message` cancelled while it waited
 * (`system.user_message_cancelled`, ./pending.ts) never enters, nor the `system.message` that
 * accompanied it (core/src/sessions/pendingQueue.ts).
 * Proved by test/e2e/turns/pending-queue.test.ts, test/e2e/events/system-message.test.ts, test/e2e/work/self-hosted-lane.test.ts and the turn tests
 * (test/e2e/sdk/sdk-flow.test.ts).
 */
export function buildHistory(events: readonly EventDoc[]): ChatMessage[] {
  return new HistoryBuilder().build(events);
}

/**
 * `buildHistory` as a fold kept between calls: a session's log only grows (events are immutable
 * and the worker's SessionLogCache hands back the same objects for the prefix it holds), so a
 * call whose log extends the previous one folds only the new events. Any other log (shorter, or
 * a different object at the previous end) is folded from the start. Each call returns a fresh
 * array. Without `freeze` its messages are fresh too. With `freeze` (a builder kept across
 * turns) the messages and their blocks are frozen and shared between calls: a message is copied
 * once (again only after it grew), not on every call, so a request on a long session does not
 * copy its whole conversation. A caller that set a message's field or a block's would throw
 * instead of changing the next request's history. The content arrays are shared but not frozen:
 * V8's `filter` and `map` take a slower path on a frozen array (the wire conversion of 8,000
 * messages: 1.2 ms against 0.3 ms), and nothing on the turn path changes them (the wire
 * conversion and resolveFileBlocks build new arrays). The answering of tool calls (`answer`) is
 * kept too and redone only from the message before the first one that changed, so a call on a
 * long session costs its new events and one copy of the array (load/README.md, "Requests on long
 * sessions"). Proved equal to a fresh build by workers/test/history-builder.test.ts.
 */
export class HistoryBuilder {
  private out: ChatMessage[] = [];
  /** With `freeze`: the frozen copy handed out for out[i], until out[i] changes. */
  private copies: Array<ChatMessage | undefined> = [];
  private waiting: ContentBlock[] = [];
  private waitingResults: ContentBlock[] = [];
  private waitingSystem: ContentBlock[] = [];
  /** The blocks of each waiting user.message (and of its system.message), by event id. */
  private waitingById = new Map<string, ContentBlock[]>();
  /** The id of the last event folded when it was a user.message (its system.message follows). */
  private lastMessage: string | undefined;
  private seen = 0;
  private last: EventDoc | undefined;
  /** With `freeze`: the conversation handed out by the last call, kept to extend. */
  private result: ChatMessage[] = [];
  /** result.length before out[i] was answered (`answer`). */
  private resultAt: number[] = [];
  /** Index in out[] of the first user message, once answered; -1 before. */
  private firstUser = -1;
  /** The first index of out[] that changed since the last call. */
  private dirty = 0;

  constructor(private readonly freeze = false) {}

  build(events: readonly EventDoc[]): ChatMessage[] {
    if (events.length < this.seen || (this.seen && events[this.seen - 1] !== this.last))
      this.reset();
    for (let i = this.seen; i < events.length; i++) this.fold(events[i]!);
    this.seen = events.length;
    this.last = events[events.length - 1];
    // Without `freeze` every call copies every message; with it, only what changed is redone.
    const src = this.freeze ? this.frozenCopies() : this.out.map(copyMessage);
    // An answer depends on the message before (a user turn after calls) and the one after (an
    // assistant turn whose calls are followed by no user turn): redo from before the change.
    const from = this.freeze ? Math.max(0, Math.min(this.dirty, this.resultAt.length) - 1) : 0;
    this.result.length = from < this.resultAt.length ? this.resultAt[from]! : this.result.length;
    this.resultAt.length = from;
    if (this.firstUser >= from) this.firstUser = -1;
    for (let i = from; i < src.length; i++) {
      this.resultAt.push(this.result.length);
      this.answer(src, i);
    }
    this.dirty = this.out.length;
    return this.result.slice();
  }

  /**
   * Appends src[i]'s part of the conversation: a conversation opens with a user turn (earlier
   * messages are left out); every tool_use must be answered by a tool_result in the next user
   * turn, and a call left without one (the client sent a message instead, or a restart
   * interrupted it) gets an error result, the tool results first in that turn; an assistant
   * turn with calls followed by no user turn (but by another message) gets an answering user
   * turn of its own. The last assistant turn's calls are being answered now: left as they are.
   */
  private answer(src: readonly ChatMessage[], i: number): void {
    const m = src[i]!;
    if (this.firstUser < 0) {
      if (m.role !== 'user') return;
      this.firstUser = i;
    }
    const prev = i > this.firstUser ? src[i - 1] : undefined;
    if (m.role === 'user' && prev?.role === 'assistant' && prev.content.some(isToolUse))
      this.result.push(answeredAfterCalls(prev, m));
    else this.result.push(m);
    const next = src[i + 1];
    if (m.role === 'assistant' && next && next.role !== 'user' && m.content.some(isToolUse)) {
      const answered = answerCalls(m, undefined);
      this.result.push(Object.isFrozen(m) ? Object.freeze(answered) : answered);
    }
  }

  /** out[], each message as its frozen copy (made now if out[i] changed since the last call). */
  private frozenCopies(): ChatMessage[] {
    for (let i = Math.min(this.dirty, this.out.length); i < this.out.length; i++) {
      if (!this.copies[i]) this.copies[i] = Object.freeze(copyMessage(this.out[i]!));
    }
    this.copies.length = this.out.length;
    return this.copies as ChatMessage[];
  }

  private reset(): void {
    this.out = [];
    this.copies = [];
    this.waiting = [];
    this.waitingResults = [];
    this.waitingSystem = [];
    this.waitingById = new Map();
    this.lastMessage = undefined;
    this.seen = 0;
    this.last = undefined;
    this.result = [];
    this.resultAt = [];
    this.firstUser = -1;
    this.dirty = 0;
  }

  private push(role: ChatMessage['role'], blocks: ContentBlock[]): void {
    if (!blocks.length) return;
    if (this.freeze) for (const b of blocks) Object.freeze(b);
    const last = this.out[this.out.length - 1];
    if (last && last.role === role) {
      last.content.push(...blocks);
      this.copies[this.out.length - 1] = undefined;
      this.dirty = Math.min(this.dirty, this.out.length - 1);
    } else {
      this.dirty = Math.min(this.dirty, this.out.length);
      this.out.push({ role, content: [...blocks] });
    }
  }

  private fold(e: EventDoc): void {
    if (aboutAThread(e)) return; // a child thread's call or answer (core/src/threads/relay.ts)
    const previous = this.lastMessage;
    this.lastMessage = e.type === 'user.message' ? e._id : undefined;
    const p = e.payload as any;
    switch (e.type) {
      case 'user.message': {
        const blocks = ((p.content ?? []) as any[]).filter(
          (b) => b.type !== 'redacted',
        ) as ContentBlock[];
        this.waiting.push(...blocks);
        this.waitingById.set(e._id, [...blocks]);
        break;
      }
      case 'system.user_message_cancelled': {
        const gone = new Set(this.waitingById.get(String(p.user_message_id)) ?? []);
        if (!gone.size) break;
        this.waiting = this.waiting.filter((b) => !gone.has(b));
        this.waitingSystem = this.waitingSystem.filter((b) => !gone.has(b));
        break;
      }
      case 'session.status_running':
        // Tool results first: the protocols require them at the head of the user turn.
        this.push('user', [...this.waitingResults, ...this.waiting]);
        this.push('system', this.waitingSystem);
        this.waiting = [];
        this.waitingResults = [];
        this.waitingSystem = [];
        this.waitingById.clear();
        break;
      case 'user.define_outcome':
        // The agent gets the outcome and the rubric it will be judged by (core/src/outcomes).
        this.waiting.push({
          type: 'text',
          text:
            `Produce this outcome:\n${String(p.description ?? '')}\n\n` +
            `When you finish, a grader will judge your work against this rubric:\n${String(p.rubric?.content ?? '')}`,
        });
        break;
      case 'span.outcome_evaluation_end':
        // The grader's verdict reaches the agent only when it must work again.
        if (p.result === 'needs_revision')
          this.push('user', [
            {
              type: 'text',
              text: `The grader judged your work against the rubric: it needs revision.\n${String(p.explanation ?? '')}\n\nRevise your work so that it meets the rubric.`,
            },
          ]);
        else if (p.result === 'max_iterations_reached')
          this.push('user', [
            {
              type: 'text',
              text: `The grader judged your work against the rubric for the last time: it still does not meet it.\n${String(p.explanation ?? '')}\n\nNo further revision will be judged. Briefly acknowledge where the work stands.`,
            },
          ]);
        break;
      case 'system.message': {
        const blocks = ((p.content ?? []) as any[])
          .filter((b) => b.type === 'text')
          .map((b) => ({ type: 'text' as const, text: String(b.text) }));
        this.waitingSystem.push(...blocks);
        if (previous) this.waitingById.get(previous)?.push(...blocks);
        break;
      }
      case 'agent.thread_message_received': {
        // A message between threads (core/src/threads): a user message where it was appended.
        // A child gets one only while idle; the primary at the end of an answer; either way
        // any call still open is answered first (answerCalls).
        const from = p.from_agent_name
          ? `thread ${String(p.from_session_thread_id)} (${String(p.from_agent_name)})`
          : 'the coordinator';
        const body = ((p.content ?? []) as any[]).filter((b) => b.type === 'text');
        this.push('user', [
          { type: 'text', text: `Message from ${from}:` },
          ...(body as ContentBlock[]),
        ]);
        break;
      }
      case 'agent.thinking':
        if (p.signature)
          this.push('assistant', [
            { type: 'thinking', thinking: p.thinking ?? '', signature: p.signature },
          ]);
        break;
      case 'agent.message':
        this.push(
          'assistant',
          ((p.content ?? []) as any[]).filter((b) => b.type === 'text') as ContentBlock[],
        );
        break;
      case 'agent.tool_use':
      case 'agent.mcp_tool_use':
      case 'agent.custom_tool_use':
        this.push('assistant', [
          { type: 'tool_use', id: e._id, name: p.name, input: p.input ?? {} },
        ]);
        break;
      case 'agent.tool_result':
        this.push('user', [
          {
            type: 'tool_result',
            tool_use_id: p.tool_use_id,
            content: p.content ?? [],
            is_error: !!p.is_error,
          },
        ]);
        break;
      case 'agent.mcp_tool_result':
        this.push('user', [
          {
            type: 'tool_result',
            tool_use_id: p.mcp_tool_use_id,
            content: p.content ?? [],
            is_error: !!p.is_error,
          },
        ]);
        break;
      case 'user.custom_tool_result':
        this.waitingResults.push({
          type: 'tool_result',
          tool_use_id: p.custom_tool_use_id,
          content: p.content ?? [],
          is_error: !!p.is_error,
        });
        break;
      case 'user.tool_result':
        this.waitingResults.push({
          type: 'tool_result',
          tool_use_id: p.tool_use_id,
          content: ((p.content ?? []) as any[]).map(searchResultAsText),
          is_error: !!p.is_error,
        });
        break;
      default:
        break;
    }
  }
}

/** A search_result block (SDK) as the text the model reads; other blocks are kept. */
function searchResultAsText(b: any): ContentBlock | Record<string, unknown> {
  if (b?.type !== 'search_result') return b;
  const body = ((b.content ?? []) as any[]).map((c) => String(c.text ?? '')).join('\n');
  return { type: 'text', text: `${b.title} (${b.source})\n${body}` };
}

const copyMessage = (m: ChatMessage): ChatMessage => ({ role: m.role, content: [...m.content] });
const isToolUse = (b: ContentBlock) => b.type === 'tool_use';
const isToolResult = (b: ContentBlock) => b.type === 'tool_result';

/**
 * A frozen user message after a frozen assistant message with calls, as answered: both never
 * change, so neither does the answer (a rebuilt builder's calls reuse it).
 */
const answeredAfter = new WeakMap<ChatMessage, { after: ChatMessage; answered: ChatMessage }>();

/** User turn `next`, after assistant turn `m` with calls, answering every call of `m`. */
function answeredAfterCalls(m: ChatMessage, next: ChatMessage): ChatMessage {
  const kept = answeredAfter.get(next);
  if (kept && kept.after === m) return kept.answered;
  const answered = answerCalls(m, next);
  if (!Object.isFrozen(m) || !Object.isFrozen(next)) return answered;
  answeredAfter.set(next, { after: m, answered: Object.freeze(answered) });
  return answered;
}

/** `next` (or an empty user turn) with its tool results first and one for each call of `m`. */
function answerCalls(m: ChatMessage, next: ChatMessage | undefined): ChatMessage {
  const blocks = next?.content ?? [];
  const answered = new Set(
    blocks.filter(isToolResult).map((b) => (b as { tool_use_id: string }).tool_use_id),
  );
  const missing = m.content
    .filter(isToolUse)
    .map((b) => (b as { id: string }).id)
    .filter((id) => !answered.has(id))
    .map((id) => ({
      type: 'tool_result' as const,
      tool_use_id: id,
      content: [{ type: 'text' as const, text: 'no result was provided for this tool call' }],
      is_error: true,
    }));
  const results = blocks.filter(isToolResult);
  const rest = blocks.filter((b) => !isToolResult(b));
  return { role: 'user', content: [...results, ...missing, ...rest] };
}
