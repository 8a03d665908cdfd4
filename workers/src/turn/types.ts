/**
 * Types the turn's steps and its tools share (the model request, the stream reader, the tool
 * dispatcher and the turn's MCP servers), in a module of their own so that none of those
 * modules imports another only for a type.
 */
import type { EventDoc, EventDraft, McpResultBlock, McpToolRef, ToolSpec } from '@agentfleet/core';

/**
 * Appends drafts to this session's log, fenced by the turn's lease, with an optional session
 * update.
 */
export type AppendFenced = (
  drafts: EventDraft[],
  extra?: Record<string, any> | ((lastSeq: number) => Record<string, any>),
) => Promise<EventDoc[]>;

/** A model's tool call; `mcp` set when the name is one of the turn's MCP tools. */
export type ToolCall = {
  id: string;
  name: string;
  input: Record<string, any>;
  mcp?: McpToolRef;
};

/** What the model request and the dispatcher need of the turn's MCP servers (../tools/mcp.ts). */
export interface McpTools {
  readonly specs: ToolSpec[];
  lookup(name: string): McpToolRef | undefined;
  call(ref: McpToolRef, input: Record<string, unknown>, signal: AbortSignal): Promise<McpResult>;
}

/** An MCP call's result: text and base64 image blocks (the SDK's agent.mcp_tool_result). */
export type McpResult = { content: McpResultBlock[]; is_error: boolean };
