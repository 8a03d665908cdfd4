/**
 * The coordinator side of session threads (core/src/threads), in the primary thread's turn:
 * - the coordinator's model gets two tools (custom tools executed here, `execution:
 *   {type: 'coordinator'}`): `start_thread {agent_name, task}` starts a child thread on a roster
 *   agent with the task as its first message, `send_to_thread {session_thread_id, message}`
 *   gives an idle child its next message. Each call appends, with its agent.tool_result, the
 *   SDK's events in the primary log (session.thread_created, agent.thread_message_sent,
 *   session.thread_status_running); the child gets agent.thread_message_received as input;
 * - a coordinator's turn does not end while its threads work: when its model ends an answer
 *   with a child running or a child's reply not yet delivered, the turn waits
 *   ({@link Coordinator.awaitReplies}; replies within REPLY_BATCH_MS of the first, or until no
 *   child runs, are delivered together), then appends each reply (the child's
 *   session.thread_status_idle and agent.thread_message_received, which the model reads as a
 *   user message: ./history.ts) and asks the model again;
 * - a child thread's turn ends with its reply to the primary (agent.thread_message_sent in its
 *   own log, in the append of its idle: {@link threadReply}), so a reply exists for every turn a
 *   child ran, and a reply is delivered once: the primary records the seq it delivered up to
 *   per child (`delivered`) in the append that delivers it;
 * - bounds: MAX_THREADS threads per session, MAX_RUNNING_THREADS running at once; a busy or
 *   archived thread takes no message (an error result tells the model why).
 * Proved by test/e2e/threads/threads.test.ts and test/e2e/threads/threads-crash.test.ts.
 */
import {
  COORDINATOR_TOOL_NAMES,
  newId,
  PREFIX,
  MAX_RUNNING_THREADS,
  MAX_THREADS,
  primaryThreadId,
  rosterAgent,
  sleep,
  type EventDoc,
  type EventDraft,
  type SessionDoc,
} from '@agentfleet/core';
import type { TurnServices } from '../services.js';
import type { AppendFenced, ToolCall } from './types.js';
import type { TurnEnd } from './events.js';

const [START, SEND] = COORDINATOR_TOOL_NAMES as [string, string];
const MAX_TASK_CHARS = 100_000;
const POLL_MS = 100;
/** A child's calls that may wait for the client (cross-posted to the primary when they do). */
const RELAYED_CALLS = ['agent.custom_tool_use', 'agent.tool_use', 'agent.mcp_tool_use'];
/** How long a reply waits for others while threads still run, so they reach the model together. */
const REPLY_BATCH_MS = 25;

/** The primary's agent with the coordinator tools and the roster in its system prompt. */
export function withCoordinatorTools(s: SessionDoc): SessionDoc {
  if (!s.roster?.length) return s;
  const names = s.roster.map((a) => a.name);
  const roster = s.roster
    .map((a) => `- ${a.name}${a.description ? `: ${a.description}` : ''}`)
    .join('\n');
  const tools = [
    {
      type: 'custom',
      name: START,
      description:
        'Start a session thread: a roster agent works on the task in its own context, in the same sandbox and files. Returns its session_thread_id at once; its reply arrives as a message when it finishes. End your answer to wait for replies.',
      input_schema: {
        type: 'object',
        properties: {
          agent_name: { type: 'string', enum: names, description: 'The roster agent to run.' },
          task: { type: 'string', description: 'The first message the thread gets.' },
        },
        required: ['agent_name', 'task'],
      },
      execution: { type: 'coordinator' },
    },
    {
      type: 'custom',
      name: SEND,
      description:
        'Send an idle session thread its next message; it keeps its context. Its reply arrives as a message.',
      input_schema: {
        type: 'object',
        properties: {
          session_thread_id: { type: 'string' },
          message: { type: 'string' },
        },
        required: ['session_thread_id', 'message'],
      },
      execution: { type: 'coordinator' },
    },
  ];
  const prompt = `You coordinate session threads. Agents you can start with ${START}:\n${roster}`;
  return {
    ...s,
    agent: {
      ...s.agent,
      system: s.agent.system ? `${s.agent.system}\n\n${prompt}` : prompt,
      tools: [...s.agent.tools, ...tools] as SessionDoc['agent']['tools'],
    },
  };
}

/** What a coordinator call appends with its result (before it), and the result. */
export interface CoordinatorResult {
  before: EventDraft[];
  content: Array<{ type: 'text'; text: string }>;
  is_error: boolean;
}

const text = (t: string, isError = false): CoordinatorResult => ({
  before: [],
  content: [{ type: 'text', text: t }],
  is_error: isError,
});
const blocks = (t: string) => [{ type: 'text' as const, text: t }];

export class Coordinator {
  private readonly primary: string;
  constructor(
    private readonly p: Pick<TurnServices, 'sessions' | 'events'>,
    private readonly tenant: string,
    private readonly root: SessionDoc,
    private readonly append: AppendFenced,
  ) {
    this.primary = primaryThreadId(root._id);
  }

  /** Runs one coordinator tool call (../tools/permissions.ts hands them here). */
  async call(call: ToolCall): Promise<CoordinatorResult> {
    const input = (call.input ?? {}) as Record<string, unknown>;
    if (call.name === START) return this.start(call.id, input);
    if (call.name === SEND) return this.send(input);
    return text(`unknown coordinator tool '${call.name}'`, true);
  }

  private async start(useId: string, input: Record<string, unknown>): Promise<CoordinatorResult> {
    const name = String(input.agent_name ?? '');
    const agent = rosterAgent(this.root.roster, name);
    const names = (this.root.roster ?? []).map((a) => a.name).join(', ');
    if (!agent) return text(`agent_name must be one of: ${names}`, true);
    const task = input.task;
    if (typeof task !== 'string' || !task.trim() || task.length > MAX_TASK_CHARS)
      return text(`task must be a non-empty string of at most ${MAX_TASK_CHARS} characters`, true);
    const { threads } = this.p.sessions;
    const children = await threads.children(this.tenant, this.root._id);
    const mine = children.find((c) => c.thread?.spawned_by === useId);
    if (!mine) {
      if (children.length >= MAX_THREADS)
        return text(
          `a session runs at most ${MAX_THREADS} threads; send_to_thread an idle one`,
          true,
        );
      const st = await threads.statuses(this.tenant, children);
      const busy = [...st.values()].filter((s) => s !== 'idle' && s !== 'terminated').length;
      if (busy >= MAX_RUNNING_THREADS)
        return text(`${MAX_RUNNING_THREADS} threads are running; wait for a reply first`, true);
    }
    const { doc } = await threads.spawn(this.tenant, this.root, agent, useId);
    // The task is the thread's first input (once: a retried call finds it there).
    if (doc.input_seq === 0)
      await threads.input(this.tenant, doc._id, [
        {
          type: 'agent.thread_message_received',
          payload: { from_session_thread_id: this.primary, content: blocks(task) },
        },
      ]);
    const ids = { session_thread_id: doc._id, agent_name: name };
    return {
      before: [
        { type: 'session.thread_created', payload: { ...ids, workflow_run_id: null } },
        {
          type: 'agent.thread_message_sent',
          payload: { to_session_thread_id: doc._id, to_agent_name: name, content: blocks(task) },
        },
        { type: 'session.thread_status_running', payload: ids },
      ],
      content: blocks(
        JSON.stringify({ session_thread_id: doc._id, status: 'running' }) +
          '\nThe thread is working; its reply arrives as a message when it finishes.',
      ),
      is_error: false,
    };
  }

  private async send(input: Record<string, unknown>): Promise<CoordinatorResult> {
    const id = String(input.session_thread_id ?? '');
    const message = input.message;
    if (typeof message !== 'string' || !message.trim() || message.length > MAX_TASK_CHARS)
      return text(
        `message must be a non-empty string of at most ${MAX_TASK_CHARS} characters`,
        true,
      );
    const { threads } = this.p.sessions;
    const child = (await threads.children(this.tenant, this.root._id)).find((c) => c._id === id);
    if (!child) return text(`${id} is not a thread of this session`, true);
    if (child.archived_at || child.terminated_at) return text(`thread ${id} is archived`, true);
    const status = (await threads.statuses(this.tenant, [child])).get(id);
    if (status !== 'idle')
      return text(`thread ${id} is ${status}: wait for its reply before sending it more`, true);
    await threads.input(this.tenant, id, [
      {
        type: 'agent.thread_message_received',
        payload: { from_session_thread_id: this.primary, content: blocks(message) },
      },
    ]);
    const name = child.thread!.agent_name;
    return {
      before: [
        {
          type: 'agent.thread_message_sent',
          payload: { to_session_thread_id: id, to_agent_name: name, content: blocks(message) },
        },
        {
          type: 'session.thread_status_running',
          payload: { session_thread_id: id, agent_name: name },
        },
      ],
      content: blocks('sent; the reply arrives as a message when the thread finishes'),
      is_error: false,
    };
  }

  /**
   * At the end of the coordinator's answer: waits while a child runs and no reply is waiting,
   * then delivers every reply not yet delivered. True when replies were delivered (the model is
   * asked again); false when no child runs and nothing waits (the turn may end).
   */
  async awaitReplies(signal: AbortSignal): Promise<boolean> {
    // A reply written in this process wakes the wait at once; one written elsewhere is seen by
    // the next poll (every POLL_MS).
    const ids = new Set<string>();
    let wake: (() => void) | null = null;
    const off = this.p.events.onAppended(async (_tenant, sid, written) => {
      if (ids.has(sid) && written.some((e) => e.type === 'agent.thread_message_sent')) wake?.();
    });
    try {
      return await this.waitForReplies(signal, ids, (f) => (wake = f));
    } finally {
      off();
    }
  }

  private async waitForReplies(
    signal: AbortSignal,
    ids: Set<string>,
    onWake: (f: (() => void) | null) => void,
  ): Promise<boolean> {
    const { threads, turns } = this.p.sessions;
    let firstReply: number | undefined;
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const children = await threads.children(this.tenant, this.root._id);
      if (!children.length) return false;
      for (const c of children) ids.add(c._id);
      const root = await turns.session(this.tenant, this.root._id);
      const delivered = root?.delivered ?? {};
      const replies: Array<{ child: SessionDoc; sent: EventDoc; idle?: EventDoc }> = [];
      const st = await threads.statuses(this.tenant, children);
      let busy = [...st.values()].some((s) => s === 'running' || s === 'rescheduling');
      for (const child of children) {
        const events = await turns.eventsOfTypes(this.tenant, child._id, [
          'agent.thread_message_sent',
          'session.status_idle',
        ]);
        events.sort((a, b) => a.seq - b.seq);
        for (const [i, e] of events.entries())
          if (e.type === 'agent.thread_message_sent' && e.seq > (delivered[child._id] ?? 0))
            replies.push({ child, sent: e, idle: events[i + 1] });
        // An idle child whose calls wait for the client: they are cross-posted, and it is busy.
        const last = events.at(-1);
        const wanted = (last?.payload as any)?.stop_reason;
        if (st.get(child._id) === 'idle' && wanted?.type === 'requires_action') {
          busy = true;
          await this.relay(child, wanted.event_ids ?? [], root?.relayed ?? {});
        }
      }
      // Replies that arrive close together go in one delivery (one model request for them).
      if (replies.length) {
        firstReply ??= Date.now();
        if (!busy || Date.now() - firstReply >= REPLY_BATCH_MS) {
          await this.deliver(replies);
          return true;
        }
      } else if (!busy) return false;
      const wait = firstReply ? Math.max(1, REPLY_BATCH_MS - (Date.now() - firstReply)) : POLL_MS;
      await Promise.race([
        sleep(Math.min(wait, POLL_MS), signal),
        new Promise<void>((res) => onWake(res)),
      ]);
      onWake(null);
    }
  }

  /** Cross-posts a child's calls that wait for the client (those not posted yet): ../../core/src/threads/relay.ts. */
  private async relay(
    child: SessionDoc,
    eventIds: string[],
    relayed: NonNullable<SessionDoc['relayed']>,
  ): Promise<void> {
    const posted = new Set(
      Object.values(relayed)
        .filter((r) => r.thread === child._id)
        .map((r) => r.id),
    );
    const todo = new Set(eventIds.filter((id) => !posted.has(id)));
    if (!todo.size) return;
    const calls = (
      await this.p.sessions.turns.eventsOfTypes(this.tenant, child._id, RELAYED_CALLS)
    ).filter((e) => todo.has(e._id));
    if (!calls.length) return;
    const set: Record<string, unknown> = {};
    const drafts: EventDraft[] = calls.map((e) => {
      const copy = newId(PREFIX.event);
      set[`relayed.${copy}`] = { thread: child._id, id: e._id };
      return { id: copy, type: e.type, payload: { ...e.payload, session_thread_id: child._id } };
    });
    drafts.push({
      type: 'session.thread_status_idle',
      payload: {
        session_thread_id: child._id,
        agent_name: child.thread!.agent_name,
        stop_reason: { type: 'requires_action', event_ids: drafts.map((d) => d.id!) },
        stop_details: null,
      },
    });
    await this.append(drafts, { $set: set });
  }

  private async deliver(replies: Array<{ child: SessionDoc; sent: EventDoc; idle?: EventDoc }>) {
    const drafts: EventDraft[] = [];
    const upTo: Record<string, number> = {};
    for (const { child, sent, idle } of replies) {
      const ids = { session_thread_id: child._id, agent_name: child.thread!.agent_name };
      drafts.push(
        {
          type: 'session.thread_status_idle',
          payload: {
            ...ids,
            stop_reason: (idle?.payload as any)?.stop_reason ?? { type: 'end_turn' },
            stop_details: null,
          },
        },
        {
          type: 'agent.thread_message_received',
          payload: {
            from_session_thread_id: child._id,
            from_agent_name: ids.agent_name,
            content: (sent.payload as any).content ?? [],
          },
        },
      );
      upTo[`delivered.${child._id}`] = Math.max(upTo[`delivered.${child._id}`] ?? 0, sent.seq);
    }
    await this.append(drafts, { $max: upTo });
  }
}

/**
 * A child thread's reply to the primary for the turn ending with `end`: its last agent.message
 * of the turn (`turn`: the turn's events, then the held answer's drafts), else a line saying how
 * the turn ended. Appended before the thread's idle, in the same write.
 */
export function threadReply(
  s: SessionDoc,
  turn: readonly Pick<EventDoc, 'type' | 'payload'>[],
  end: TurnEnd,
): EventDraft | null {
  // A turn that waits for the client has no reply yet: its calls are cross-posted instead.
  if (!s.thread || end.stop_reason.type === 'requires_action') return null;
  let content: unknown[] | undefined;
  for (let i = turn.length - 1; i >= 0 && !content; i--) {
    const e = turn[i]!;
    if (e.type === 'session.status_running') break;
    if (e.type === 'agent.message') content = ((e.payload as any).content ?? []) as unknown[];
  }
  const how = end.interrupted ? 'was interrupted' : `stopped (${end.stop_reason.type})`;
  return {
    type: 'agent.thread_message_sent',
    payload: {
      to_session_thread_id: s.thread.parent_thread_id,
      content: content?.length ? content : blocks(`the thread ${how} without a reply`),
    },
  };
}
