import {
  AgentCreate,
  AgentListQuery,
  AgentRetrieveQuery,
  AgentUpdate,
  EnvironmentCreate,
  EnvironmentListQuery,
  SessionCreate,
  SessionListQuery,
  UserMessageParams,
  VersionListQuery,
  type SessionEventOut,
} from '@agentfleet/schemas';
import { ApiError, invalid, renderEvent } from '@agentfleet/core';
import { isNotFound } from './errors.js';
import { evalResolvers } from './evals.js';
import { followEvents, listEvents } from './events.js';
import { threadLog, threadResolvers } from './threads.js';
import {
  argsOf,
  inputOf,
  toAgent,
  toConnection,
  toEnvironment,
  toEvent,
  toCostReport,
  toSession,
} from './mappers.js';
import type { GqlContext, ResolverMap } from './schema.js';

const agentCreate = inputOf(AgentCreate);
const agentUpdate = inputOf(AgentUpdate);
const environmentCreate = inputOf(EnvironmentCreate);
const sessionCreate = inputOf(SessionCreate);
const userMessage = inputOf(UserMessageParams);
const agentGetArgs = argsOf(AgentRetrieveQuery, { version: 'version' });
const agentListArgs = argsOf(AgentListQuery, {
  limit: 'limit',
  page: 'page',
  includeArchived: 'include_archived',
});
const versionListArgs = argsOf(VersionListQuery, { limit: 'limit', page: 'page' });
const environmentListArgs = argsOf(EnvironmentListQuery, {
  limit: 'limit',
  page: 'page',
  includeArchived: 'include_archived',
});
const sessionListArgs = argsOf(SessionListQuery, {
  agentId: 'agent_id',
  status: 'status',
  limit: 'limit',
  page: 'page',
  order: 'order',
  includeArchived: 'include_archived',
});

const lower = (v: unknown) => (typeof v === 'string' ? v.toLowerCase() : v);
/** Every resolver is scoped to the caller's tenant: another tenant's ids are simply not found. */
const tenant = (ctx: GqlContext) => ctx.principal.tenantId;

/** An optional reference (agent → environment): null when it no longer exists. */
async function environmentOrNull(ctx: GqlContext, id: string | null) {
  if (!id) return null;
  try {
    return toEnvironment(await ctx.services.environments.get(tenant(ctx), id));
  } catch (err) {
    if (isNotFound(err)) return null;
    throw err;
  }
}

export interface ResolverDeps {
  /** Abort handles of open subscriptions (aborted when the server closes). */
  subscriptions: Set<AbortController>;
}

export function resolvers(deps: ResolverDeps): ResolverMap {
  return {
    Query: {
      dashboard: async (_, _args, ctx) => ctx.services.dashboard.figures(tenant(ctx)),
      agent: async (_, args, ctx) =>
        toAgent(await ctx.services.agents.get(tenant(ctx), args.id, agentGetArgs(args).version)),
      agents: async (_, args, ctx) =>
        toConnection(await ctx.services.agents.list(tenant(ctx), agentListArgs(args)), toAgent),
      agentVersions: async (_, args, ctx) =>
        toConnection(
          await ctx.services.agents.listVersions(tenant(ctx), args.agentId, versionListArgs(args)),
          toAgent,
        ),
      environment: async (_, args, ctx) =>
        toEnvironment(await ctx.services.environments.get(tenant(ctx), args.id)),
      environments: async (_, args, ctx) =>
        toConnection(
          await ctx.services.environments.list(tenant(ctx), environmentListArgs(args)),
          toEnvironment,
        ),
      session: async (_, args, ctx) =>
        toSession(await ctx.services.sessions.get(tenant(ctx), args.id)),
      sessions: async (_, args, ctx) => {
        const q = sessionListArgs({
          ...args,
          status: lower(args.status),
          order: lower(args.order),
        });
        return toConnection(await ctx.services.sessions.list(tenant(ctx), q), toSession);
      },
      sessionEvents: async (_, args, ctx) =>
        toConnection(await listEvents(ctx.services, tenant(ctx), args), toEvent),
      costReport: async (_, args, ctx) => {
        if (!ctx.principal.operator)
          throw new ApiError('forbidden', 'the cost report requires the operator API key');
        const q: Record<string, unknown> = { starting_at: args.startingAt };
        if (args.endingAt != null) q.ending_at = args.endingAt;
        if (args.groupBy != null) q.group_by = (args.groupBy as string[]).join(',');
        for (const [k, v] of [
          ['tenant_id', args.tenantId],
          ['agent_id', args.agentId],
          ['session_id', args.sessionId],
          ['kind', args.kind],
          ['source', args.source],
        ] as const)
          if (v != null) q[k] = v;
        return toCostReport(await ctx.services.cost.report(q));
      },
      ...evalResolvers.Query,
      ...threadResolvers.Query,
    },

    Mutation: {
      createEnvironment: async (_, args, ctx) =>
        toEnvironment(
          await ctx.services.environments.create(tenant(ctx), environmentCreate(args.input)),
        ),
      createAgent: async (_, args, ctx) =>
        toAgent(await ctx.services.agents.create(tenant(ctx), agentCreate(args.input))),
      updateAgent: async (_, args, ctx) => {
        const body = agentUpdate(args.input);
        return toAgent(await ctx.services.agents.update(tenant(ctx), args.id, body));
      },
      archiveAgent: async (_, args, ctx) =>
        toAgent(await ctx.services.agents.archive(tenant(ctx), args.id)),
      createSession: async (_, args, ctx) =>
        toSession(await ctx.services.sessions.create(tenant(ctx), sessionCreate(args.input))),
      sendMessage: async (_, args, ctx) => {
        const hasText = args.text !== undefined && args.text !== null;
        const hasContent = args.content !== undefined && args.content !== null;
        if (hasText === hasContent)
          throw invalid('text', 'exactly one of text or content is required');
        if (hasText && !args.text) throw invalid('text', 'must not be empty');
        const event = userMessage({
          type: 'user.message',
          content: hasText ? [{ type: 'text', text: args.text }] : args.content,
        });
        const [written] = await ctx.services.sessions.send(tenant(ctx), args.sessionId, [event]);
        return toEvent(renderEvent(written!));
      },
      interrupt: async (_, args, ctx) => {
        const [written] = await ctx.services.sessions.send(tenant(ctx), args.sessionId, [
          { type: 'user.interrupt' },
        ]);
        return toEvent(renderEvent(written!));
      },
    },

    Subscription: {
      sessionEvents: {
        /**
         * Checked before the stream opens (NOT_FOUND, BAD_USER_INPUT arrive as the operation's
         * result). Without afterSeq the log head read here is the replay point, so every event
         * appended after the subscription was accepted is delivered, even ones appended before
         * the live channel subscription completes. With threadId: that thread's log (its head
         * the replay point), after the session check (threads.ts threadLog).
         */
        subscribe: async (_, args, ctx) => {
          const afterSeq = args.afterSeq ?? null;
          if (afterSeq !== null && afterSeq < 0)
            throw invalid('afterSeq', 'must be a non-negative integer event seq');
          const { logId, head } = await threadLog(
            ctx.services,
            tenant(ctx),
            args.sessionId,
            args.threadId,
          );
          return followEvents(
            ctx.services.events,
            tenant(ctx),
            logId,
            afterSeq ?? head,
            deps.subscriptions,
          );
        },
        resolve: (ev: SessionEventOut) => toEvent(ev),
      },
    },

    Agent: {
      environment: (a, _, ctx) => environmentOrNull(ctx, a.environmentId),
    },
    Session: {
      environment: (s, _, ctx) => environmentOrNull(ctx, s.environmentId),
      ...threadResolvers.Session,
    },
    EvalRun: evalResolvers.EvalRun,
  };
}
