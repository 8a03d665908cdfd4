/**
 * Turns one streamed model response into live events and the canonical events to append.
 * Guarantees: every chunk is published live as it arrives (message, thinking and tool-input
 * streams, each opened and closed); text before a tool call becomes its own agent.message, so
 * the stored order matches the model's; a call to a client-executed custom tool is stored as
 * agent.custom_tool_use, a call to one of the turn's MCP tools as agent.mcp_tool_use (name
 * `mcp__<server>__<tool>`, plus mcp_server_name and the bare mcp_tool_name), every other call as
 * agent.tool_use, each with its evaluated permission (../tools/permissions.ts); an aborted signal
 * stops reading.
 * Message chunks carry `index`, the position of their block in the agent.message's content.
 * Proven by test/e2e/sessions/sessions-events.test.ts, test/e2e/sdk/sdk-flow.test.ts, test/e2e/sandbox/sandbox-tools.test.ts and
 * test/e2e/events/event-deltas.test.ts.
 */
import {
  newId,
  PREFIX,
  type EventDraft,
  type McpToolRef,
  type ModelStreamEvent,
  type ModelUsage,
} from '@agentfleet/core';
import { classify } from '../tools/executor.js';
import { mcpPermissionFields, permissionFields } from '../tools/permissions.js';
import { zeroUsage } from './events.js';
import type { ToolCall } from './types.js';

export type StreamedResponse = {
  drafts: EventDraft[];
  toolUses: ToolCall[];
  stop: string;
  usage: ModelUsage;
};

/** Publishes one live (not stored) event of the session. */
export type PublishLive = (type: string, payload: Record<string, unknown>) => Promise<unknown>;

/** Streams chunks live and collects the canonical events of one model response. */
export async function consumeModelStream(
  stream: AsyncIterable<ModelStreamEvent>,
  signal: AbortSignal,
  tools: any[],
  live: PublishLive,
  mcp?: { lookup(name: string): McpToolRef | undefined },
): Promise<StreamedResponse> {
  const drafts: EventDraft[] = [];
  const toolUses: ToolCall[] = [];
  const toolIds = new Map<string, string>();
  let textId = '',
    thinkingId = '',
    text: Array<{ type: 'text'; text: string }> = [];
  let stop = 'end_turn';
  let usage: ModelUsage = zeroUsage();
  let first = true;
  for await (const ev of stream) {
    if (signal.aborted) throw signal.reason;
    if (first) {
      first = false;
      await live('span.model_first_token', {});
    }
    switch (ev.type) {
      case 'text_start':
        textId ||= newId(PREFIX.event);
        // index: the block's position in the agent.message's content array (SDK content_delta).
        await live('agent.message_stream_start', { message_id: textId, index: text.length });
        break;
      case 'text_delta':
        await live('agent.message_chunk', {
          message_id: textId,
          delta: ev.text,
          index: text.length,
        });
        break;
      case 'text_end':
        await live('agent.message_stream_end', { message_id: textId, index: text.length });
        text.push({ type: 'text', text: ev.text });
        break;
      case 'thinking_start':
        thinkingId = newId(PREFIX.event);
        await live('agent.thinking_stream_start', { thinking_id: thinkingId });
        break;
      case 'thinking_delta':
        await live('agent.thinking_chunk', { thinking_id: thinkingId, delta: ev.thinking });
        break;
      case 'thinking_end':
        await live('agent.thinking_stream_end', { thinking_id: thinkingId });
        drafts.push({
          id: thinkingId,
          type: 'agent.thinking',
          payload: {
            thinking: ev.thinking,
            ...(ev.signature ? { signature: ev.signature } : {}),
          },
        });
        break;
      case 'tool_use_start': {
        const id = newId(PREFIX.event);
        toolIds.set(ev.id, id);
        await live('agent.tool_use_input_stream_start', { tool_use_id: id, name: ev.name });
        break;
      }
      case 'tool_use_delta':
        await live('agent.tool_use_input_chunk', {
          tool_use_id: toolIds.get(ev.id),
          delta: ev.partial_json,
        });
        break;
      case 'tool_use_end': {
        const id = toolIds.get(ev.id) ?? newId(PREFIX.event);
        await live('agent.tool_use_input_stream_end', { tool_use_id: id });
        if (text.length) {
          drafts.push({ id: textId, type: 'agent.message', payload: { content: text } });
          text = [];
          textId = '';
        }
        const ref = mcp?.lookup(ev.name);
        if (ref) {
          // name: the spec's mcp__<server>__<tool>; mcp_tool_name: the server's own tool name.
          drafts.push({
            id,
            type: 'agent.mcp_tool_use',
            payload: {
              name: ev.name,
              mcp_server_name: ref.server,
              mcp_tool_name: ref.tool,
              input: ev.input,
              // A tool the turn did not offer is refused before any policy applies (SDK).
              ...(ref.enabled === false
                ? { evaluated_permission: 'deny' }
                : mcpPermissionFields(tools, ref)),
            },
          });
          toolUses.push({ id, name: ev.name, input: ev.input, mcp: ref });
          break;
        }
        const clientSide = classify(tools, ev.name).kind === 'custom_client';
        drafts.push({
          id,
          type: clientSide ? 'agent.custom_tool_use' : 'agent.tool_use',
          payload: {
            name: ev.name,
            input: ev.input,
            ...(clientSide ? {} : permissionFields(tools, ev.name)),
          },
        });
        toolUses.push({ id, name: ev.name, input: ev.input });
        break;
      }
      case 'message_end':
        stop = ev.stop_reason;
        usage = ev.usage;
        break;
      default:
        break;
    }
  }
  if (text.length) drafts.push({ id: textId, type: 'agent.message', payload: { content: text } });
  return { drafts, toolUses, stop, usage };
}
