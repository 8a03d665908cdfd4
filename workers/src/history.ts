import type { ChatMessage, ContentBlock, EventDoc } from '@agentfleet/core';

/**
 * Rebuilds the model conversation from canonical events. User input enters the conversation
 * at the turn that consumed it (the next session.status_running), not where it was appended:
 * messages sent during a turn belong after that turn's reply. Tool calls use the
 * agent.tool_use event id as the tool id, so a tool_use and its tool_result pair up across
 * restarts.
 */
export function buildHistory(events: EventDoc[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  const push = (role: 'user' | 'assistant', blocks: ContentBlock[]) => {
    if (!blocks.length) return;
    const last = out[out.length - 1];
    if (last && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: [...blocks] });
  };
  let waiting: ContentBlock[] = [];
  for (const e of events) {
    const p = e.payload as any;
    switch (e.type) {
      case 'user.message':
        waiting.push(...((p.content as any[]).filter((b) => b.type !== 'redacted') as ContentBlock[]));
        break;
      case 'session.status_running':
        push('user', waiting);
        waiting = [];
        break;
      case 'agent.thinking':
        if (p.signature) push('assistant', [{ type: 'thinking', thinking: p.thinking ?? '', signature: p.signature }]);
        break;
      case 'agent.message':
        push('assistant', (p.content as any[]).filter((b) => b.type === 'text') as ContentBlock[]);
        break;
      case 'agent.tool_use':
      case 'agent.custom_tool_use':
        push('assistant', [{ type: 'tool_use', id: e._id, name: p.name, input: p.input ?? {} }]);
        break;
      case 'agent.tool_result':
        push('user', [{ type: 'tool_result', tool_use_id: p.tool_use_id, content: p.content ?? [], is_error: !!p.is_error }]);
        break;
      case 'user.custom_tool_result':
        push('user', [{ type: 'tool_result', tool_use_id: p.custom_tool_use_id, content: p.content ?? [], is_error: !!p.is_error }]);
        break;
      default:
        break;
    }
  }
  // A conversation must open with a user turn.
  while (out.length && out[0]!.role !== 'user') out.shift();
  return out;
}
