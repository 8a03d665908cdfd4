/**
 * Compile-time contract between the served types (inferred from the schemas in
 * `@agentfleet/schemas`) and the official SDK's types. Checked by `tsc -p test/tsconfig.json`;
 * never run (it is not a test file and nothing imports it).
 *
 * - `expectAssignable<Sdk>(value<Ours>())` compiles only if every value of our type is a valid
 *   value of the SDK's type (extra fields are allowed: they are our extensions).
 * - Where the served shape is KNOWN to differ from the SDK, the differing field is left out of
 *   the whole-object check and pinned with `pin<Mismatch<Ours, Sdk>>()`, which compiles only WHILE
 *   the two are incompatible. Fixing the difference breaks the pin: delete it and put the field
 *   back into the whole-object check. Nothing here is cast.
 */
import type { Static } from '@sinclair/typebox';
import type * as S from '@agentfleet/schemas';
import type {
  BetaManagedAgentsAgent,
  BetaManagedAgentsAgentToolConfig,
  BetaManagedAgentsAgentToolset20260401,
  BetaManagedAgentsAnthropicSkill,
  BetaManagedAgentsCustomSkill,
  BetaManagedAgentsCustomTool,
  BetaManagedAgentsMCPServerURLDefinition,
  BetaManagedAgentsMCPToolset,
  BetaManagedAgentsWebFetchToolConfig,
} from '@anthropic-ai/sdk/resources/beta/agents/agents';
import type { BetaEnvironment } from '@anthropic-ai/sdk/resources/beta/environments/environments';
import type {
  BetaManagedAgentsDeltaEvent,
  BetaManagedAgentsSession,
  BetaManagedAgentsSessionAgent,
  BetaManagedAgentsStartEvent,
  BetaManagedAgentsSystemMessageEvent,
} from '@anthropic-ai/sdk/resources/beta/sessions/sessions';
import type * as E from '@anthropic-ai/sdk/resources/beta/sessions/events';
import type { BetaManagedAgentsSessionResource } from '@anthropic-ai/sdk/resources/beta/sessions/resources';
import type { BetaErrorObject, BetaErrorResponse } from '@anthropic-ai/sdk/resources/beta/beta';

declare function value<T>(): T;
function expectAssignable<Sdk>(_ours: Sdk): void {}
/** `true` while `Ours` is not assignable to `Sdk`; a message once it is. */
type Mismatch<Ours, Sdk> = [Ours] extends [Sdk]
  ? 'fixed: remove this pin and restore the full check'
  : true;
function pin<_Known extends true>(): void {}

type ToolsetOut = Extract<S.AgentToolOut, { type: 'agent_toolset_20260401' }>;
type ToolConfigOut = ToolsetOut['configs'][number];
type AnySkill = BetaManagedAgentsAnthropicSkill | BetaManagedAgentsCustomSkill;
type Ev<T extends keyof typeof S.SESSION_EVENT_SCHEMAS> = Static<
  (typeof S.SESSION_EVENT_SCHEMAS)[T]
>;

/** Agent fields whose served shape differs from the SDK's (pinned below). */
type AgentGaps = 'tools' | 'mcp_servers' | 'multiagent';

export function typeChecks(): void {
  // ------------------------------------------------------------------------------------------
  // Agent → BetaManagedAgentsAgent
  expectAssignable<Omit<BetaManagedAgentsAgent, AgentGaps>>(value<S.Agent>());

  // tools: toolsets (all but web_fetch configs), MCP toolsets and custom tools conform…
  expectAssignable<BetaManagedAgentsAgentToolset20260401>(
    value<
      Omit<ToolsetOut, 'configs'> & {
        configs: Array<Exclude<ToolConfigOut, { name: 'web_fetch' }>>;
      }
    >(),
  );
  expectAssignable<BetaManagedAgentsMCPToolset>(
    value<Extract<S.AgentToolOut, { type: 'mcp_toolset' }>>(),
  );
  expectAssignable<BetaManagedAgentsCustomTool>(
    value<Extract<S.AgentToolOut, { type: 'custom' }>>(),
  );
  expectAssignable<BetaManagedAgentsAgentToolConfig>(
    value<Exclude<ToolConfigOut, { name: 'web_fetch' }>>(),
  );
  // …but a web_fetch config carries `url_sources` only if the client sent it (SDK: required, nullable).
  pin<
    Mismatch<Extract<ToolConfigOut, { name: 'web_fetch' }>, BetaManagedAgentsWebFetchToolConfig>
  >();

  // skills: served resolved (`vendor` is stored as `anthropic`, a missing version as 'latest').
  expectAssignable<AnySkill>(value<S.SkillOut>());

  // mcp_servers: URL servers conform; stdio servers are an extension the SDK has no type for.
  expectAssignable<BetaManagedAgentsMCPServerURLDefinition>(
    value<Extract<S.McpServerOut, { type: 'url' }>>(),
  );
  pin<Mismatch<S.McpServerOut, BetaManagedAgentsMCPServerURLDefinition>>();

  // multiagent: served as the client sent it ({type, …}), not resolved to the SDK's
  // coordinator / multiagent_20261001 forms.
  pin<Mismatch<S.Agent['multiagent'], BetaManagedAgentsAgent['multiagent']>>();

  // ------------------------------------------------------------------------------------------
  // Environment → BetaEnvironment
  expectAssignable<BetaEnvironment>(value<S.Environment>());

  // ------------------------------------------------------------------------------------------
  // Session → BetaManagedAgentsSession
  expectAssignable<Omit<BetaManagedAgentsSession, 'agent' | 'budget' | 'resources'>>(
    value<S.Session>(),
  );
  // resources: file, memory_store and github_repository conform; a repository declared as the
  // spec's `code_host_repository` is served under that name, which the SDK has no type for.
  type ResourceOut = Static<typeof S.SessionResource>;
  type RepositoryOut = Extract<ResourceOut, { url: string }>;
  expectAssignable<BetaManagedAgentsSessionResource>(
    value<
      | Exclude<ResourceOut, RepositoryOut>
      | (Omit<RepositoryOut, 'type'> & { type: 'github_repository' })
    >(),
  );
  pin<Mismatch<ResourceOut, BetaManagedAgentsSessionResource>>();
  // The pinned agent has the Agent's gaps (same schema fields); the rest conforms.
  expectAssignable<Omit<BetaManagedAgentsSessionAgent, AgentGaps>>(value<S.SessionAgent>());
  pin<Mismatch<S.SessionAgent['mcp_servers'], BetaManagedAgentsSessionAgent['mcp_servers']>>();
  pin<Mismatch<S.SessionAgent['multiagent'], BetaManagedAgentsSessionAgent['multiagent']>>();
  // budget: served as the client sent it ({type: 'limit', …}); the SDK requires max_list_cost.
  pin<Mismatch<S.Session['budget'], BetaManagedAgentsSession['budget']>>();

  // ------------------------------------------------------------------------------------------
  // Events → the SDK's event types
  expectAssignable<E.BetaManagedAgentsUserInterruptEvent>(value<Ev<'user.interrupt'>>());
  expectAssignable<E.BetaManagedAgentsSessionStatusRunningEvent>(
    value<Ev<'session.status_running'>>(),
  );
  expectAssignable<E.BetaManagedAgentsSessionStatusIdleEvent>(value<Ev<'session.status_idle'>>());
  expectAssignable<E.BetaManagedAgentsSessionStatusRescheduledEvent>(
    value<Ev<'session.status_rescheduled'>>(),
  );
  expectAssignable<E.BetaManagedAgentsSessionStatusTerminatedEvent>(
    value<Ev<'session.status_terminated'>>(),
  );
  expectAssignable<E.BetaManagedAgentsSessionErrorEvent>(value<Ev<'session.error'>>());
  expectAssignable<E.BetaManagedAgentsSessionDeletedEvent>(value<Ev<'session.deleted'>>());
  expectAssignable<E.BetaManagedAgentsAgentMessageEvent>(value<Ev<'agent.message'>>());
  expectAssignable<E.BetaManagedAgentsAgentThinkingEvent>(value<Ev<'agent.thinking'>>());
  expectAssignable<E.BetaManagedAgentsAgentToolUseEvent>(value<Ev<'agent.tool_use'>>());
  expectAssignable<E.BetaManagedAgentsAgentToolResultEvent>(value<Ev<'agent.tool_result'>>());
  expectAssignable<E.BetaManagedAgentsAgentMCPToolUseEvent>(value<Ev<'agent.mcp_tool_use'>>());
  expectAssignable<E.BetaManagedAgentsAgentMCPToolResultEvent>(
    value<Ev<'agent.mcp_tool_result'>>(),
  );
  expectAssignable<E.BetaManagedAgentsSpanModelRequestStartEvent>(
    value<Ev<'span.model_request_start'>>(),
  );
  expectAssignable<E.BetaManagedAgentsSpanModelRequestEndEvent>(
    value<Ev<'span.model_request_end'>>(),
  );

  // user.message / user.custom_tool_result echo the request's content, whose blocks are the SDK's.
  expectAssignable<E.BetaManagedAgentsUserMessageEvent>(value<Ev<'user.message'>>());
  expectAssignable<E.BetaManagedAgentsUserCustomToolResultEvent>(
    value<Ev<'user.custom_tool_result'>>(),
  );
  expectAssignable<E.BetaManagedAgentsUserToolConfirmationEvent>(
    value<Ev<'user.tool_confirmation'>>(),
  );
  // system.message echoes the request's text blocks.
  expectAssignable<BetaManagedAgentsSystemMessageEvent>(value<Ev<'system.message'>>());

  expectAssignable<E.BetaManagedAgentsAgentThreadContextCompactedEvent>(
    value<Ev<'agent.thread_context_compacted'>>(),
  );

  // The union: every conforming event type is a member of the SDK's event unions
  // (session.warning, span.compaction_summarize_*, aux.model_call, span.wakeup_scheduled and
  // the pending-queue system.user_message_* events are extensions with no SDK type).
  type Conforming = Exclude<
    S.SessionEvent,
    {
      type:
        | 'session.warning'
        | 'span.compaction_summarize_start'
        | 'span.compaction_summarize_end'
        | 'aux.model_call'
        | 'span.wakeup_scheduled'
        | (typeof S.PENDING_QUEUE_EVENT_TYPES)[number];
    }
  >;
  expectAssignable<E.BetaManagedAgentsSessionEvent>(value<Conforming>());
  expectAssignable<E.BetaManagedAgentsStreamSessionEvents>(value<Conforming>());

  // SDK preview frames (`event_deltas`) made from chunk events. The chunk events themselves
  // (agent.*_stream_start/_chunk/_stream_end, span.model_first_token) are extensions.
  expectAssignable<BetaManagedAgentsStartEvent>(value<Static<typeof S.StreamStartEvent>>());
  expectAssignable<BetaManagedAgentsDeltaEvent>(value<Static<typeof S.StreamDeltaEvent>>());
  expectAssignable<E.BetaManagedAgentsStreamSessionEvents>(
    value<Static<typeof S.StreamStartEvent> | Static<typeof S.StreamDeltaEvent>>(),
  );

  // ------------------------------------------------------------------------------------------
  // Error body → BetaErrorResponse: the envelope conforms; the error types are the spec's
  // (invalid_request, not_found, …), not the SDK's (invalid_request_error, not_found_error, …).
  expectAssignable<Omit<BetaErrorResponse, 'error'>>(value<S.ErrorBody>());
  expectAssignable<Omit<BetaErrorObject, 'type'>>(value<S.ErrorBody['error']>());
  pin<Mismatch<S.ErrorType, BetaErrorObject['type']>>();
}
