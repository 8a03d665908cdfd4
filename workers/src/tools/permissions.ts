/**
 * Permission policies of the agent's tools, and the tool calls a turn dispatches under them.
 * Guarantees:
 * - a call's policy is its tool's own `permission_policy` (a toolset `configs[]` entry, already
 *   resolved against the toolset's `default_config` when the agent was stored), else the
 *   toolset's `default_config.permission_policy`, else `always_allow`; this covers the built-in
 *   agent toolset and `mcp_toolset` (per server and tool name); a custom tool's policy is its
 *   own `permission_policy` (an extension: the SDK's custom tools have none; on client-executed
 *   ones only always_allow is accepted, core/src/agents/toolPolicy.ts), else always_allow;
 * - every agent.tool_use and agent.mcp_tool_use records the SDK's `evaluated_permission` and
 *   `evaluation` (an MCP call's policy: its toolset's, by server and bare tool name):
 *   always_allow → allow, always_ask → ask; `auto` is refused when an agent or session update
 *   names it (core/src/agents/toolPolicy.ts), and a policy stored before that refusal holds the
 *   call as ask with `reason_code: 'indeterminate'` (no per-call judge); a tool that is not enabled
 *   → deny without an evaluation (refused before any policy applied);
 * - an `ask` call is never run before the client allows it: the turn ends idle with
 *   `requires_action` naming it, together with the calls of client-executed custom tools; calls
 *   allowed by policy in the same model response run at once;
 * - the next turn first settles the held calls from the event log alone (so a worker crash or a
 *   redelivered command loses nothing): `allow` runs the tool and appends its agent.tool_result,
 *   `deny` appends an is_error agent.tool_result carrying the deny message (or a default text),
 *   a call the client never confirmed before sending a new user.message gets an is_error result
 *   (agent.mcp_tool_result for an MCP call, run on the turn's MCP servers: ./mcp.ts),
 *   and only then is the model called again. A call whose result is already in the log is never
 *   run again; a confirmed call whose worker died before its result was appended runs again on
 *   recovery (at least once, as the client allowed it).
 * On a self_hosted environment (the ama_worker lane, ./selfHosted.ts) the worker executes the
 * agent toolset: such calls wait like client-executed ones, an `allow` hands a held call to the
 * worker instead of running it, and answers count only up to the turn's input.
 * Proven by test/e2e/sandbox/permission-policy.test.ts, test/e2e/sandbox/permission-crash.test.ts (kill -9 mid-turn),
 * test/e2e/work/self-hosted-lane.test.ts,
 * test/e2e/mcp/mcp-tools.test.ts, test/e2e/mcp/mcp-tools-crash.test.ts and test/e2e/sdk/sdk_suite/test_permissions.py.
 */
import { TOOLSET_TYPE } from '@agentfleet/schemas';
import {
  aboutAThread,
  type EventDoc,
  type McpResultBlock,
  type McpToolRef,
  type SessionRef,
} from '@agentfleet/core';
import type { AppendFenced, McpTools, ToolCall } from '../turn/types.js';
import { classify, type ToolExecutor, type ToolKind } from './executor.js';
import { ABANDONED_WORKER_CALL_TEXT, type SelfHostedLane } from './selfHosted.js';
import type { Coordinator } from '../turn/threads.js';

export type PolicyType = 'always_allow' | 'always_ask' | 'auto';

/** The SDK's evaluated_permission and evaluation, as recorded on agent.tool_use. */
export type PermissionFields = {
  evaluated_permission: 'allow' | 'ask' | 'deny';
  evaluation?:
    | { type: 'always_allow' }
    | { type: 'always_ask' }
    | { type: 'auto'; evaluated_permission: { type: 'ask'; reason_code: string } };
};

const policyType = (p: unknown): PolicyType | undefined => {
  const t = (p as { type?: unknown } | null | undefined)?.type;
  return t === 'always_allow' || t === 'always_ask' || t === 'auto' ? t : undefined;
};

/** The permission policy that governs a call to `name` (of MCP server `mcpServer`, if given). */
export function resolvePolicy(tools: readonly any[], name: string, mcpServer?: string): PolicyType {
  const custom = mcpServer ? undefined : tools?.find((t) => t.type === 'custom' && t.name === name);
  if (custom) return policyType(custom.permission_policy) ?? 'always_allow';
  for (const t of tools ?? []) {
    const isToolset = mcpServer
      ? t.type === 'mcp_toolset' && t.mcp_server_name === mcpServer
      : t.type === TOOLSET_TYPE;
    if (!isToolset) continue;
    const own = (t.configs ?? []).find((c: any) => c.name === name);
    return (
      policyType(own?.permission_policy) ??
      policyType(t.default_config?.permission_policy) ??
      'always_allow'
    );
  }
  return 'always_allow';
}

/** What agent.tool_use records for a call to `name`. */
export function permissionFields(tools: readonly any[], name: string): PermissionFields {
  const kind = classify(tools, name);
  if (kind.kind === 'unknown') return { evaluated_permission: 'deny' };
  if (kind.kind === 'custom_client')
    return { evaluated_permission: 'allow', evaluation: { type: 'always_allow' } };
  return fieldsOf(resolvePolicy(tools, name));
}

/** What agent.mcp_tool_use records for a call to `ref.tool` of MCP server `ref.server`. */
export function mcpPermissionFields(tools: readonly any[], ref: McpToolRef): PermissionFields {
  return fieldsOf(resolvePolicy(tools, ref.tool, ref.server));
}

function fieldsOf(policy: PolicyType): PermissionFields {
  switch (policy) {
    case 'always_ask':
      return { evaluated_permission: 'ask', evaluation: { type: 'always_ask' } };
    case 'auto':
      return {
        evaluated_permission: 'ask',
        evaluation: {
          type: 'auto',
          evaluated_permission: { type: 'ask', reason_code: 'indeterminate' },
        },
      };
    default:
      return { evaluated_permission: 'allow', evaluation: { type: 'always_allow' } };
  }
}

const DEFAULT_DENY_TEXT = 'the user denied permission to run this tool call';
const UNCONFIRMED_TEXT =
  'this tool call was not run: it was not confirmed before the next user message';

/** The result event of a call: agent.mcp_tool_result for an MCP call, else agent.tool_result. */
const resultDraft = (useId: string, mcp: boolean, content: McpResultBlock[], isError: boolean) =>
  mcp
    ? {
        type: 'agent.mcp_tool_result',
        payload: { mcp_tool_use_id: useId, content, is_error: isError },
      }
    : { type: 'agent.tool_result', payload: { tool_use_id: useId, content, is_error: isError } };

const errorResult = (useId: string, text: string, mcp = false) =>
  resultDraft(useId, mcp, [{ type: 'text', text }], true);

/** Dispatches one turn's tool calls under the agent's permission policies. */
export class ToolCallDispatcher {
  constructor(
    private readonly tools: readonly any[],
    private readonly executor: ToolExecutor,
    private readonly ctx: { session: SessionRef; signal: AbortSignal },
    private readonly append: AppendFenced,
    /** The turn's MCP servers (./mcp.ts); calls carrying `mcp` go there. */
    private readonly mcp?: McpTools,
    /** Set on a self_hosted session: the worker executes the agent toolset (./selfHosted.ts). */
    private readonly lane: SelfHostedLane | null = null,
    /** A coordinator session's primary thread: its thread tools (../turn/threads.ts). */
    private readonly coordinator?: Coordinator,
  ) {}

  /**
   * Runs the calls of one model response that may run now, in order. Returns the ids the turn
   * waits for (held by a policy, or client-executed), in call order: the requires_action list.
   */
  async dispatch(calls: readonly ToolCall[]): Promise<string[]> {
    const waiting: string[] = [];
    for (const call of calls) {
      if (call.mcp) {
        const { server, tool } = call.mcp;
        if (call.mcp.enabled === false)
          await this.append([
            errorResult(call.id, `MCP tool '${tool}' of server '${server}' is not enabled`, true),
          ]);
        else if (mcpPermissionFields(this.tools, call.mcp).evaluated_permission === 'ask')
          waiting.push(call.id);
        else await this.runMcp(call.id, call.mcp, call.input);
        continue;
      }
      const kind = classify(this.tools, call.name);
      if (kind.kind === 'custom_client') waiting.push(call.id);
      else if (permissionFields(this.tools, call.name).evaluated_permission === 'ask')
        waiting.push(call.id);
      else if (this.lane?.runsOnWorker(kind)) waiting.push(call.id);
      else await this.run(call, kind);
    }
    return waiting;
  }

  /**
   * Settles the calls earlier turns held, from the session's log: allowed ones run, denied and
   * abandoned ones get an error result. Returns the ids still waiting for the client (held calls
   * without a confirmation, client-executed calls without a result), in log order; when any
   * remain the turn must end again with requires_action and not call the model. Client input
   * after `upToSeq` (the turn's input: answers, confirmations, messages) is left to the next turn.
   * Everything read about a call comes after it, so a cloud session's turn passes the log from
   * its earliest open call (../turn/openCalls.ts) rather than the whole log.
   */
  async settleHeld(all: readonly EventDoc[], upToSeq = Infinity): Promise<string[]> {
    // Client input after the turn's input (answers, confirmations, messages) is the next turn's.
    const later = (e: EventDoc) => e.type.startsWith('user.') && e.seq > upToSeq;
    // A child thread's cross-posted calls and their answers are the thread's (core/src/threads).
    const log = all.filter((e) => !(upToSeq !== Infinity && later(e)) && !aboutAThread(e));
    const answered = new Set<string>();
    const confirmations = new Map<string, EventDoc>();
    for (const e of log) {
      if (e.type === 'agent.tool_result') answered.add(String(e.payload.tool_use_id));
      if (e.type === 'user.tool_result') answered.add(String(e.payload.tool_use_id));
      if (e.type === 'agent.mcp_tool_result') answered.add(String(e.payload.mcp_tool_use_id));
      if (e.type === 'user.custom_tool_result') answered.add(String(e.payload.custom_tool_use_id));
      if (e.type === 'user.tool_confirmation' && !confirmations.has(String(e.payload.tool_use_id)))
        confirmations.set(String(e.payload.tool_use_id), e);
    }
    const waiting: string[] = [];
    for (const [i, use] of log.entries()) {
      const mcp = use.type === 'agent.mcp_tool_use';
      const held =
        (use.type === 'agent.tool_use' || mcp) && use.payload.evaluated_permission === 'ask';
      const onWorker = !!this.lane?.awaits(use);
      if ((!held && !onWorker && use.type !== 'agent.custom_tool_use') || answered.has(use._id))
        continue;
      const conf = held ? confirmations.get(use._id) : undefined;
      if (onWorker && (!held || conf?.payload.result === 'allow')) {
        // The worker runs it (after the client's allow, if held): wait for its user.tool_result.
        if (!abandoned(log, i)) waiting.push(use._id);
        else await this.append([errorResult(use._id, ABANDONED_WORKER_CALL_TEXT)]);
      } else if (conf?.payload.result === 'allow' && mcp) {
        const ref = { server: String(use.payload.mcp_server_name), tool: mcpToolOf(use) };
        await this.runMcp(use._id, ref, (use.payload.input ?? {}) as ToolCall['input']);
      } else if (conf?.payload.result === 'allow') {
        const name = String(use.payload.name);
        const call = { id: use._id, name, input: (use.payload.input ?? {}) as ToolCall['input'] };
        await this.run(call, classify(this.tools, name));
      } else if (conf) {
        const text = String(conf.payload.deny_message ?? '') || DEFAULT_DENY_TEXT;
        await this.append([errorResult(use._id, text, mcp)]);
      } else if (!abandoned(log, i)) waiting.push(use._id);
      else if (held) await this.append([errorResult(use._id, UNCONFIRMED_TEXT, mcp)]);
      // An abandoned client-executed call is answered in the history (history.ts).
    }
    return waiting;
  }

  private async run(call: ToolCall, kind: ToolKind): Promise<void> {
    if (this.ctx.signal.aborted) throw this.ctx.signal.reason;
    const refused = this.lane?.refusal(kind);
    if (refused) return void (await this.append([errorResult(call.id, refused)]));
    if (kind.kind === 'coordinator') {
      // Its thread events go in the same append as its result.
      const r = this.coordinator
        ? await this.coordinator.call(call)
        : {
            before: [],
            content: [{ type: 'text' as const, text: 'not a coordinator session' }],
            is_error: true,
          };
      return void (await this.append([
        ...r.before,
        resultDraft(call.id, false, r.content, r.is_error),
      ]));
    }
    const result = await this.executor.execute(kind, call.input, this.ctx);
    await this.append([resultDraft(call.id, false, result.content, result.is_error)]);
  }

  private async runMcp(useId: string, ref: McpToolRef, input: ToolCall['input']): Promise<void> {
    if (this.ctx.signal.aborted) throw this.ctx.signal.reason;
    const result = this.mcp
      ? await this.mcp.call(ref, input, this.ctx.signal)
      : {
          content: [{ type: 'text' as const, text: 'MCP servers are not available' }],
          is_error: true,
        };
    await this.append([resultDraft(useId, true, result.content, result.is_error)]);
  }
}

/** The bare MCP tool name of an agent.mcp_tool_use (its `mcp_tool_name`, else from `name`). */
function mcpToolOf(use: EventDoc): string {
  if (typeof use.payload.mcp_tool_name === 'string') return use.payload.mcp_tool_name;
  const prefix = `mcp__${String(use.payload.mcp_server_name)}__`;
  const name = String(use.payload.name);
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

/**
 * A call is abandoned once the turn that made it has ended (its session.status_idle) and the
 * client sent a user.message after that instead of answering it.
 */
function abandoned(log: readonly EventDoc[], useIndex: number): boolean {
  let idleSeen = false;
  for (let j = useIndex + 1; j < log.length; j++) {
    const e = log[j]!;
    if (e.type === 'session.status_idle') idleSeen = true;
    else if (idleSeen && e.type === 'user.message') return true;
  }
  return false;
}
