// Session events as the console reads them (GraphQL SessionEvent: data is the stored payload,
// in the SDK's shapes) and what they mean for the view: text, summaries, calls awaiting the user.

export type Ev = { id: string; seq: number; type: string; createdAt: string; data: unknown };
export const FIELDS = 'id seq type createdAt data';

type Block = { type?: string; text?: string };
type Data = {
  content?: Block[];
  name?: string;
  input?: unknown;
  thinking?: string;
  evaluated_permission?: 'allow' | 'ask' | 'deny';
  tool_use_id?: string;
  custom_tool_use_id?: string;
  mcp_tool_use_id?: string;
  is_error?: boolean | null;
  error?: { type?: string; message?: string };
  stop_reason?: string | { type?: string; event_ids?: string[] };
  model_usage?: { input_tokens?: number; output_tokens?: number };
  result?: 'allow' | 'deny';
  deny_message?: string | null;
  agent_name?: string;
  from_agent_name?: string;
  to_agent_name?: string;
};

export const dataOf = (e: Ev): Data => (e.data ?? {}) as Data;

/** The text blocks of a content array, joined. */
export function textOf(content: Block[] | undefined): string {
  return (content ?? []).map((c) => (c.type === 'text' || c.text ? (c.text ?? '') : '')).join('');
}

/** One line for the timeline row. */
export function summary(e: Ev): string {
  const d = dataOf(e);
  switch (e.type) {
    case 'user.message':
    case 'agent.message':
    case 'system.message':
      return textOf(d.content);
    case 'agent.thinking':
      return (d.thinking ?? '').slice(0, 160);
    case 'agent.tool_use':
    case 'agent.mcp_tool_use':
    case 'agent.custom_tool_use':
      return `${d.name ?? ''}${d.evaluated_permission ? ` (${d.evaluated_permission})` : ''}`;
    case 'agent.tool_result':
    case 'agent.mcp_tool_result':
    case 'user.custom_tool_result':
    case 'user.tool_result':
      return `${d.is_error ? 'error: ' : ''}${textOf(d.content).slice(0, 160)}`;
    case 'user.tool_confirmation':
      return `${d.result ?? ''}${d.deny_message ? `: ${d.deny_message}` : ''}`;
    case 'session.error':
      return `${d.error?.type ?? 'error'}: ${d.error?.message ?? ''}`;
    case 'session.status_idle':
      return typeof d.stop_reason === 'object' ? (d.stop_reason?.type ?? '') : '';
    case 'span.model_request_end':
      return `${d.is_error ? 'failed · ' : ''}${d.model_usage?.input_tokens ?? 0} in / ${
        d.model_usage?.output_tokens ?? 0
      } out tokens${typeof d.stop_reason === 'string' ? ` · ${d.stop_reason}` : ''}`;
    // A coordinator's threads (console/src/session/Threads.tsx): who, and the message's text
    // (no agent name: the primary thread, the coordinator).
    case 'agent.thread_message_received':
      return `from ${d.from_agent_name ?? 'the coordinator'}: ${textOf(d.content)}`;
    case 'agent.thread_message_sent':
      return `to ${d.to_agent_name ?? 'the coordinator'}: ${textOf(d.content)}`;
    case 'session.thread_created':
    case 'session.thread_status_running':
      return d.agent_name ?? '';
    case 'session.thread_status_idle':
      return `${d.agent_name ?? ''}${typeof d.stop_reason === 'object' ? ` · ${d.stop_reason?.type ?? ''}` : ''}`;
    default: {
      const s = JSON.stringify(e.data ?? {});
      return s === '{}' ? '' : s.slice(0, 160);
    }
  }
}

/** The expandable detail of a row: the parts worth reading in full. */
export function detail(e: Ev): Array<{ label: string; text: string }> {
  const d = dataOf(e);
  const json = (v: unknown) => JSON.stringify(v, null, 2);
  switch (e.type) {
    case 'agent.tool_use':
    case 'agent.mcp_tool_use':
    case 'agent.custom_tool_use':
      return [
        { label: 'Tool', text: d.name ?? '' },
        { label: 'Input', text: json(d.input ?? {}) },
      ];
    case 'agent.tool_result':
    case 'agent.mcp_tool_result':
    case 'user.custom_tool_result':
    case 'user.tool_result':
      return [
        { label: d.is_error ? 'Result (error)' : 'Result', text: textOf(d.content) },
        { label: 'Content', text: json(d.content ?? []) },
      ];
    case 'agent.thinking':
      return [{ label: 'Thinking', text: d.thinking ?? '' }];
    case 'session.error':
      return [
        { label: 'Error', text: d.error?.message ?? '' },
        { label: 'Data', text: json(e.data) },
      ];
    default:
      return [{ label: 'Data', text: json(e.data) }];
  }
}

export type Pending = { kind: 'confirmation' | 'custom'; event: Ev };

/**
 * Calls that wait on the user: agent.tool_use held for confirmation (evaluated_permission
 * 'ask') and agent.custom_tool_use, each until it is answered (user.tool_confirmation,
 * user.custom_tool_result, or a result) or abandoned by a later user.message; plus the ids a
 * requires_action idle names that are still unanswered.
 */
export function pendingCalls(events: Ev[]): Pending[] {
  const open = new Map<string, Pending>();
  for (const e of events) {
    const d = dataOf(e);
    if (e.type === 'agent.tool_use' && d.evaluated_permission === 'ask')
      open.set(e.id, { kind: 'confirmation', event: e });
    else if (e.type === 'agent.custom_tool_use') open.set(e.id, { kind: 'custom', event: e });
    else if (e.type === 'user.message') open.clear();
    else {
      const answered = d.tool_use_id ?? d.custom_tool_use_id;
      if (answered) open.delete(answered);
    }
  }
  return [...open.values()];
}

/** The conversation: user and agent messages, and messages from other threads, as text. */
export function conversation(events: Ev[]): Array<{ id: string; who: string; text: string }> {
  return events
    .filter(
      (e) =>
        e.type === 'user.message' ||
        e.type === 'agent.message' ||
        e.type === 'agent.thread_message_received',
    )
    .map((e) => ({
      id: e.id,
      who:
        e.type === 'user.message'
          ? 'You'
          : e.type === 'agent.message'
            ? 'Agent'
            : (dataOf(e).from_agent_name ?? 'Coordinator'),
      text: textOf(dataOf(e).content),
    }));
}
