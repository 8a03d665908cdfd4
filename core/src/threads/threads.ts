/**
 * Session threads (SDK `client.beta.sessions.threads`): list, retrieve, archive, the log a
 * thread's events are read from, the child threads a coordinator spawns, and the usage of a
 * session summed over its threads.
 *
 * Guarantees (test/e2e/threads/threads.test.ts, test/e2e/sdk/sdk_suite/test_threads.py):
 * - every session has its primary thread (the session itself, ./records.ts); a coordinator
 *   session has one child thread per start_thread call, created once (its id is derived from
 *   the call, so a retried or recovered call finds the thread it made);
 * - a child thread runs its roster agent's pinned snapshot in the session's sandbox, with the
 *   session's environment, resources and vaults (its document copies them; the sandbox is the
 *   session's: workers/src/turn/sessionRef.ts);
 * - reads are scoped to the session: another session's (or tenant's) thread id is a 404;
 * - a thread's status is derived like a session's: terminated, rescheduling (its turn was
 *   orphaned), running (a turn started, or input waits for one), else idle;
 * - only an idle child thread can be archived; an archived thread takes no more messages;
 * - the session's `usage` is the sum over its threads (one budget for the whole session:
 *   {@link withThreadUsage}, read by the turn's budget check).
 */
import { invalid, notFound } from '../errors.js';
import type { Collections } from '../store/collections.js';
import { DuplicateKeyError } from '../store/port.js';
import { makePage, decodeCursor, type Page } from '../api/pagination.js';
import type { RunDoc, SessionAgentSnapshot, SessionDoc } from '../sessions/records.js';
import { renderUsage } from '../sessions/budget.js';
import { renderStats, runIsLive } from '../sessions/status.js';
import { renderSpec } from '../agents/agents.js';
import { nowIso } from '../util.js';
import { freshSession, interruptAppended, threadInputAppended } from '../sessions/turnState.js';
import type { EventDraft, EventLog } from '../events/log.js';
import type { CommandBus } from '../bus/port.js';
import type { PubSub } from '../coordination/port.js';
import { publishInterrupt } from '../sessions/sessionInput.js';
import { childThreadId, isThreadId, primaryThreadId, type ThreadLink } from './records.js';

export type ThreadStatus = 'running' | 'idle' | 'rescheduling' | 'terminated';
const STATUSES: readonly ThreadStatus[] = ['running', 'idle', 'rescheduling', 'terminated'];

/** A thread's status from its document and run record (see the file header). */
export function threadStatus(s: SessionDoc, run: RunDoc | null | undefined): ThreadStatus {
  if (s.terminated_at) return 'terminated';
  const live = runIsLive(s, run);
  if (live === 'rescheduling') return 'rescheduling';
  return live || (s.pending && s.input_seq > s.processed_seq) ? 'running' : 'idle';
}

/** The SDK's BetaManagedAgentsSessionThreadAgent of a snapshot. */
export function renderThreadAgent(a: SessionAgentSnapshot) {
  const spec = renderSpec(a);
  return {
    id: a.id,
    type: 'agent' as const,
    version: a.version,
    name: spec.name,
    description: spec.description ?? null,
    model: spec.model,
    system: spec.system ?? null,
    tools: spec.tools,
    skills: spec.skills,
    mcp_servers: spec.mcp_servers,
    execution_identity: spec.execution_identity ?? { type: 'service_account' },
  };
}

/** The usage counters of `root` summed with its child threads' (one budget, one bill). */
export function withThreadUsage(root: SessionDoc, children: readonly SessionDoc[]): SessionDoc {
  if (!children.length) return root;
  const out = structuredClone(root) as SessionDoc & Record<string, any>;
  for (const c of children as Array<SessionDoc & Record<string, any>>) {
    for (const k of Object.keys(out.usage) as Array<keyof SessionDoc['usage']>)
      out.usage[k] = (out.usage[k] ?? 0) + (c.usage?.[k] ?? 0);
    out.list_cost_nanos = (out.list_cost_nanos ?? 0) + (c.list_cost_nanos ?? 0);
    if (c.unpriced_usage) out.unpriced_usage = true;
  }
  return out;
}

export class ThreadService {
  constructor(
    private readonly c: Pick<Collections, 'sessions' | 'runs'>,
    private readonly log: EventLog,
    private readonly bus: Pick<CommandBus, 'publish'>,
    private readonly pubsub: PubSub,
  ) {}

  /**
   * Input for a child thread (its task, a coordinator's message: agent.thread_message_received):
   * appended to its log with the turn-state update of input, then its turn is requested (a lost
   * command is re-driven by the recovery scan, like a client's input).
   */
  async input(tenant: string, childId: string, drafts: EventDraft[]): Promise<void> {
    const written = await this.log.append(tenant, childId, drafts, {
      sessionUpdate: threadInputAppended,
    });
    const seq = written[written.length - 1]!.seq;
    await this.bus
      .publish('session.turn.requested', { tenant_id: tenant, session_id: childId, seq })
      .catch(() => {});
  }

  /** Interrupts these child threads: a user.interrupt in each one's log, published to its turn. */
  async interrupt(tenant: string, childIds: readonly string[]): Promise<void> {
    for (const id of childIds) {
      const [ev] = await this.log.append(tenant, id, [{ type: 'user.interrupt', payload: {} }], {
        sessionUpdate: (last) => interruptAppended(last),
      });
      await publishInterrupt(this.pubsub, id, ev!.seq, 'user.interrupt');
    }
  }

  /** The children an interrupt of the whole session reaches: those running or rescheduling. */
  async busyChildren(tenant: string, sessionId: string): Promise<string[]> {
    const children = (await this.children(tenant, sessionId)).filter((c) => !c.terminated_at);
    const st = await this.statuses(tenant, children);
    return children.filter((c) => st.get(c._id) !== 'idle').map((c) => c._id);
  }

  /** The session's child threads, oldest first (deleted sessions' too: the caller checks). */
  children(tenant: string, sessionId: string): Promise<SessionDoc[]> {
    return this.c.sessions.find(tenant, { thread_of: sessionId }, { sort: { _id: 1 } });
  }

  /** Each child's status, by thread id (one read of the run records). */
  async statuses(tenant: string, children: readonly SessionDoc[]) {
    const runs = children.length
      ? await this.c.runs.find(tenant, { _id: { $in: children.map((c) => c._id) } })
      : [];
    const byId = new Map(runs.map((r) => [r._id, r]));
    return new Map(children.map((c) => [c._id, threadStatus(c, byId.get(c._id))]));
  }

  /** The served thread (SDK BetaManagedAgentsSessionThread); `child` null: the primary. */
  render(
    root: SessionDoc,
    child: SessionDoc | null,
    status: ThreadStatus,
    children: readonly SessionDoc[] = [],
  ) {
    const s = child ?? root;
    const ran = s.idle_seq !== undefined;
    return {
      id: child ? child._id : primaryThreadId(root._id),
      type: 'session_thread' as const,
      session_id: root._id,
      parent_thread_id: child?.thread?.parent_thread_id ?? null,
      agent: renderThreadAgent(s.agent),
      status,
      archived_at: child ? child.archived_at : root.archived_at,
      created_at: s.created_at,
      updated_at: s.updated_at,
      stats: ran ? { ...renderStats(s), startup_seconds: 0 } : null,
      // The primary's own usage (the session's `usage` sums every thread's).
      usage: ran
        ? { ...renderUsage(child ? s : root), active_seconds: (s.active_ms ?? 0) / 1000 }
        : null,
      workflow_run_id: null,
    };
  }

  /** `GET /v1/sessions/:id/threads`: the primary first, then the children oldest first. */
  async list(
    tenant: string,
    root: SessionDoc,
    rootStatus: ThreadStatus,
    q: { limit?: number; page?: string; statuses?: string[] },
  ): Promise<Page<ReturnType<ThreadService['render']>>> {
    const wanted = q.statuses ?? [];
    wanted.forEach((st, i) => {
      if (!STATUSES.includes(st as ThreadStatus))
        throw invalid(`statuses[${i}]`, `must be one of ${STATUSES.join(', ')}`);
    });
    const children = await this.children(tenant, root._id);
    const statuses = await this.statuses(tenant, children);
    let all = [
      this.render(root, null, rootStatus),
      ...children.map((c) => this.render(root, c, statuses.get(c._id)!)),
    ];
    if (wanted.length) all = all.filter((t) => wanted.includes(t.status));
    const limit = q.limit ?? 20;
    const after = q.page ? decodeCursor(q.page) : null;
    const from = after ? all.findIndex((t) => t.id === after.k) + 1 : 0;
    return makePage(
      all.slice(from, from + limit + 1),
      limit,
      (t) => t.id,
      (t) => t.id,
      {
        hadCursor: !!after,
        backwards: false,
      },
    );
  }

  /** A child thread of `root`, or null when `id` names its primary; 404 for any other id. */
  async child(tenant: string, root: SessionDoc, id: string): Promise<SessionDoc | null> {
    if (id === primaryThreadId(root._id)) return null;
    const doc = isThreadId(id) ? await this.c.sessions.get(tenant, id) : null;
    if (!doc || doc.thread_of !== root._id) throw notFound('session_thread', id);
    return doc;
  }

  async get(tenant: string, root: SessionDoc, rootStatus: ThreadStatus, id: string) {
    const child = await this.child(tenant, root, id);
    if (!child) return this.render(root, null, rootStatus);
    const run = await this.c.runs.get(tenant, child._id);
    return this.render(root, child, threadStatus(child, run));
  }

  /** Archives an idle child thread (idempotent); the primary is archived with its session. */
  async archive(tenant: string, root: SessionDoc, rootStatus: ThreadStatus, id: string) {
    const child = await this.child(tenant, root, id);
    if (!child)
      throw invalid(
        'thread_id',
        'the primary thread is archived with its session (archive the session)',
      );
    const status = threadStatus(child, await this.c.runs.get(tenant, child._id));
    if (status === 'running' || status === 'rescheduling')
      throw invalid('thread_id', `thread ${id} is ${status}; interrupt it before archiving it`);
    const now = nowIso();
    await this.c.sessions.updateOne(
      tenant,
      { _id: id, archived_at: null },
      { $set: { archived_at: now, updated_at: now } },
    );
    return this.get(tenant, root, rootStatus, id);
  }

  /** The id whose event log holds thread `id`'s events (the session's for its primary). */
  async logOf(tenant: string, root: SessionDoc, id: string): Promise<string> {
    return (await this.child(tenant, root, id))?._id ?? root._id;
  }

  /**
   * The child thread that `spawnedBy` (a start_thread call of the primary) creates on roster
   * agent `agent`: created once; a second call with the same `spawnedBy` answers the first's.
   */
  async spawn(
    tenant: string,
    root: SessionDoc,
    agent: SessionAgentSnapshot,
    spawnedBy: string,
  ): Promise<{ doc: SessionDoc; created: boolean }> {
    const id = childThreadId(spawnedBy);
    const now = nowIso();
    const thread: ThreadLink = {
      session_id: root._id,
      parent_thread_id: primaryThreadId(root._id),
      agent_name: agent.name,
      spawned_by: spawnedBy,
    };
    const doc: Omit<SessionDoc, 'tenant_id'> = {
      _id: id,
      thread_of: root._id,
      thread,
      agent_id: agent.id,
      agent_version: agent.version,
      agent,
      environment_id: root.environment_id,
      ...(root.environment ? { environment: root.environment } : {}),
      title: null,
      metadata: {},
      resources: root.resources,
      ...(root.repository_tokens ? { repository_tokens: root.repository_tokens } : {}),
      vault_ids: root.vault_ids,
      budget: null,
      ...freshSession(now),
    };
    try {
      await this.c.sessions.insert(tenant, doc);
      return { doc: { ...doc, tenant_id: tenant } as SessionDoc, created: true };
    } catch (err) {
      if (!(err instanceof DuplicateKeyError)) throw err;
      return { doc: (await this.c.sessions.get(tenant, id))!, created: false };
    }
  }
}
