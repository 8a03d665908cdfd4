/**
 * Session threads in GraphQL: `Session.threads`, `sessionThreads(sessionId)`,
 * `sessionThread(sessionId, threadId)` and `threadEvents(sessionId, threadId)`, the same answers
 * as REST GET /v1/sessions/:id/threads, …/threads/:thread_id and …/threads/:thread_id/events
 * (gateway/src/routes/threads.ts), through the same calls: the session first
 * (`sessions.getDoc`, so another tenant's or an unknown session is NOT_FOUND), then
 * `sessions.threads` (core/src/threads), so another session's thread id is NOT_FOUND and a bad
 * limit, cursor or status is BAD_USER_INPUT naming the argument. The subscription
 * `sessionEvents(sessionId, threadId)` follows one thread's log through {@link threadLog}.
 * Its SDL extends the contract of schemas/src/graphql.ts (Query, Session, SessionAgent,
 * SessionStatus, SessionEventConnection). The document limits (gateway/src/graphql/limits.ts)
 * apply as to every field: `threads(limit:)` is a page-size multiplier of the cost.
 * Proved by test/e2e/graphql/graphql-threads.test.ts.
 */
import { ThreadListQuery } from '@agentfleet/schemas';
import type { SessionDoc, ThreadService, ThreadStatus } from '@agentfleet/core';
import { listEvents } from './events.js';
import { argsOf, toConnection, toEvent, toModel } from './mappers.js';
import type { GqlContext, Resolver, ResolverServices } from './schema.js';

export const threadTypeDefs = /* GraphQL */ `
  "A thread's own usage (a session's usage sums its threads'); null until the thread ran."
  type ThreadUsage {
    inputTokens: Int!
    outputTokens: Int!
    cacheReadInputTokens: Int!
    cacheCreationInputTokens: Int!
    activeSeconds: Float!
  }

  type ThreadStats {
    activeSeconds: Float!
    durationSeconds: Float!
    startupSeconds: Float!
  }

  "A thread of a session: the primary (the session itself; its events are the session's) or a child thread a coordinator started (its own log)."
  type SessionThread {
    id: ID!
    "session_thread"
    type: String!
    sessionId: ID!
    "null for the primary thread."
    parentThreadId: ID
    agent: SessionAgent!
    "Derived like a session's: TERMINATED, RESCHEDULING, RUNNING, else IDLE."
    status: SessionStatus!
    archivedAt: String
    createdAt: String!
    updatedAt: String!
    usage: ThreadUsage
    stats: ThreadStats
  }

  type SessionThreadConnection {
    nodes: [SessionThread!]!
    hasMore: Boolean!
    nextPage: String
    prevPage: String
  }

  extend type Session {
    "The primary thread first, then the child threads oldest first. limit 1..1000 (default 20)."
    threads(limit: Int, page: String, statuses: [SessionStatus!]): SessionThreadConnection!
  }

  extend type Query {
    "The session's threads (as Session.threads). limit 1..1000 (default 20)."
    sessionThreads(
      sessionId: ID!
      limit: Int
      page: String
      statuses: [SessionStatus!]
    ): SessionThreadConnection!
    sessionThread(sessionId: ID!, threadId: ID!): SessionThread
    "One thread's persisted events (the primary's are the session's), as sessionEvents."
    threadEvents(
      sessionId: ID!
      threadId: ID!
      afterSeq: Int
      limit: Int
      order: Order
      page: String
      types: [String!]
    ): SessionEventConnection!
  }
`;

type ThreadOut = ReturnType<ThreadService['render']>;

export const toThread = (t: ThreadOut) => ({
  id: t.id,
  type: t.type,
  sessionId: t.session_id,
  parentThreadId: t.parent_thread_id,
  agent: {
    id: t.agent.id,
    version: t.agent.version,
    name: t.agent.name,
    description: t.agent.description,
    model: toModel(t.agent.model),
    system: t.agent.system,
    tools: t.agent.tools,
    skills: t.agent.skills,
    mcpServers: t.agent.mcp_servers,
  },
  status: t.status.toUpperCase(),
  archivedAt: t.archived_at,
  createdAt: t.created_at,
  updatedAt: t.updated_at,
  usage: t.usage && {
    inputTokens: t.usage.input_tokens,
    outputTokens: t.usage.output_tokens,
    cacheReadInputTokens: t.usage.cache_read_input_tokens,
    cacheCreationInputTokens: t.usage.cache_creation_input_tokens,
    activeSeconds: t.usage.active_seconds,
  },
  stats: t.stats && {
    activeSeconds: t.stats.active_seconds,
    durationSeconds: t.stats.duration_seconds,
    startupSeconds: t.stats.startup_seconds,
  },
});

const listArgs = argsOf(ThreadListQuery, { limit: 'limit', page: 'page', statuses: 'statuses' });
const tenant = (ctx: GqlContext) => ctx.principal.tenantId;
const lowerAll = (v: unknown) =>
  Array.isArray(v) ? v.map((s) => (typeof s === 'string' ? s.toLowerCase() : s)) : v;

/** The tenant's session (NOT_FOUND otherwise) and its primary thread's status. */
async function root(ctx: GqlContext, sessionId: string) {
  const doc = await ctx.services.sessions.getDoc(tenant(ctx), sessionId);
  const { status } = await ctx.services.sessions.get(tenant(ctx), sessionId);
  return { doc, status: status as ThreadStatus };
}

async function threadPage(ctx: GqlContext, doc: SessionDoc, status: ThreadStatus, args: any) {
  const q = listArgs({ ...args, statuses: lowerAll(args.statuses) });
  return toConnection(
    await ctx.services.sessions.threads.list(tenant(ctx), doc, status, q),
    toThread,
  );
}

/**
 * The log a subscription to thread `threadId` of session `sessionId` follows, and that log's
 * head (the replay point without afterSeq), after the session check: NOT_FOUND for another
 * tenant's session or for a thread id not of this session. Without a thread: the session's.
 */
export async function threadLog(
  p: Pick<ResolverServices, 'sessions'>,
  tenantId: string,
  sessionId: string,
  threadId: string | null | undefined,
): Promise<{ logId: string; head: number }> {
  const doc = await p.sessions.getDoc(tenantId, sessionId);
  if (threadId == null) return { logId: doc._id, head: doc.last_seq };
  const child = await p.sessions.threads.child(tenantId, doc, threadId);
  return { logId: child?._id ?? doc._id, head: (child ?? doc).last_seq };
}

/** The thread fields of the resolver map (merged into resolvers.ts's Query and Session). */
export const threadResolvers: {
  Query: Record<string, Resolver>;
  Session: Record<string, Resolver>;
} = {
  Query: {
    sessionThreads: async (_, args, ctx) => {
      const { doc, status } = await root(ctx, args.sessionId);
      return threadPage(ctx, doc, status, args);
    },
    sessionThread: async (_, args, ctx) => {
      const { doc, status } = await root(ctx, args.sessionId);
      return toThread(
        await ctx.services.sessions.threads.get(tenant(ctx), doc, status, args.threadId),
      );
    },
    threadEvents: async (_, args, ctx) =>
      toConnection(await listEvents(ctx.services, tenant(ctx), args), toEvent),
  },
  Session: {
    // The parent is a Session the caller could read; its doc is read again for the thread list.
    threads: async (s: { id: string; status: string }, args, ctx) => {
      const doc = await ctx.services.sessions.getDoc(tenant(ctx), s.id);
      return threadPage(ctx, doc, s.status.toLowerCase() as ThreadStatus, args);
    },
  },
};
