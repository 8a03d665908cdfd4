/**
 * A coordinator session's roster, pinned at session create: each roster entry's agent version
 * as a session agent snapshot (skills pinned, like the session's own agent: ../sessions/agent.ts),
 * so later edits of a roster agent never reach the session's threads. A `self` entry (the
 * session's own agent) is the session's snapshot, overrides included, without `multiagent`:
 * a roster is one level deep. Proved by test/e2e/threads/threads.test.ts.
 */
import { invalid } from '../errors.js';
import type { AgentService } from '../agents/agents.js';
import type { Coordinator } from '../agents/multiagent.js';
import type { Collections } from '../store/collections.js';
import { sessionAgentSnapshot } from '../sessions/agent.js';
import type { SessionAgentSnapshot } from '../sessions/records.js';

export async function pinRoster(
  c: Pick<Collections, 'agentVersions'>,
  agents: AgentService,
  tenant: string,
  session: SessionAgentSnapshot,
): Promise<SessionAgentSnapshot[] | undefined> {
  const m = session.multiagent as Coordinator | null | undefined;
  if (m?.type !== 'coordinator') return undefined;
  return Promise.all(
    m.agents.map(async (e, i) => {
      if (e.type === 'self' || e.id === session.id) return { ...session, multiagent: null };
      const v = await c.agentVersions.findOne(tenant, { agent_id: e.id, version: e.version });
      if (!v)
        throw invalid(
          `agent.multiagent.agents[${i}]`,
          `roster agent ${e.id} has no version ${e.version}`,
        );
      return sessionAgentSnapshot(agents, tenant, e.id, v.spec, e.version);
    }),
  );
}

/** The roster entry a start_thread call names (by agent name), or undefined. */
export const rosterAgent = (roster: readonly SessionAgentSnapshot[] | undefined, name: string) =>
  roster?.find((a) => a.name === name);
