/**
 * A session's agent snapshot: the pinned agent version with the SDK's
 * `agent_with_overrides` fields applied (`model`, `system`, `tools`, `skills`, `mcp_servers`;
 * the SDK's BetaManagedAgentsAgentWithOverridesParams lists no others). Guarantees:
 * - each provided field replaces the agent's value in the session's snapshot only; the agent
 *   resource is unchanged; an omitted field keeps the agent's value; `[]` clears a list and
 *   `system: null` clears the prompt;
 * - fields are normalised exactly as on agent create (model object form, tool configs, skills
 *   in object form (a bare string is a 400), MCP tokens sealed, a url server sent back without its token keeping the
 *   agent's sealed token);
 * - the merged agent passes the agent-create checks (AgentService.validateSpec: model card,
 *   speed, tool names, MCP server names, every server referenced by exactly one mcp_toolset and
 *   every mcp_toolset naming a server, on the RESULTING tools and mcp_servers); a failure is a
 *   400 naming `agent.<field>` (test/e2e/mcp/mcp-references.test.ts);
 * - the turn runner reads only this snapshot, so every override takes effect in turns;
 * - `skills` (the agent's or the override's) are pinned here: `pinned_skills` holds the resolved
 *   versions and names, and the snapshot's refs show the pinned version (./skills.ts;
 *   test/e2e/skills/skills-session.test.ts).
 * - a session update's `agent.tools` / `agent.mcp_servers` pass the same MCP server checks on
 *   the session's resulting agent (checkSessionAgentMcp).
 * Proved by test/e2e/agents/agent-overrides.test.ts, test/e2e/mcp/mcp-references.test.ts and
 * test/e2e/sdk/sdk_suite/test_overrides.py.
 */
import type { AgentSpec, SessionCreate } from '@agentfleet/schemas';
import { ApiError } from '../errors.js';
import type { AgentService } from '../agents/agents.js';
import {
  checkMcpServers,
  normalizeModel,
  normalizeSkills,
  normalizeTools,
} from '../agents/agents.js';
import { pinnedRefs } from './skills.js';
import type { SessionAgentSnapshot } from './records.js';

type AgentRef = SessionCreate['agent'];

/** The error of a check run on the merged agent, renamed to the request's `agent.<field>`. */
export function underAgent(err: unknown): unknown {
  if (!(err instanceof ApiError) || typeof err.details?.field !== 'string') return err;
  const field = err.details.field;
  const named = `agent.${field}`;
  const message = err.message.startsWith(`${field}:`)
    ? `${named}${err.message.slice(field.length)}`
    : `${named}: ${err.message}`;
  return new ApiError(err.type, message, { ...err.details, field: named });
}

/**
 * The snapshot a session runs with: `pinned` (the agent version's spec) with the overrides of
 * `ref` applied and checked. A plain reference returns the pinned spec as is.
 */
export async function sessionAgentSnapshot(
  agents: AgentService,
  tenant: string,
  ref: AgentRef,
  pinned: AgentSpec,
  version: number,
): Promise<SessionAgentSnapshot> {
  const agentId = typeof ref === 'string' ? ref : ref.id;
  const snapshot: SessionAgentSnapshot = { ...structuredClone(pinned), id: agentId, version };
  if (typeof ref !== 'object' || ref.type !== 'agent_with_overrides') {
    // The agent's skill refs, pinned now: the session keeps these versions for its lifetime.
    const skills = await agents.pinSkills(tenant, snapshot.skills).catch((err) => {
      throw underAgent(err);
    });
    return withPinnedSkills(snapshot, skills);
  }
  if (ref.model !== undefined) snapshot.model = normalizeModel(ref.model);
  if (ref.system !== undefined) snapshot.system = ref.system;
  if (ref.tools !== undefined) snapshot.tools = normalizeTools(ref.tools, 'agent.tools');
  if (ref.skills !== undefined) snapshot.skills = normalizeSkills(ref.skills, 'agent.skills');
  if (ref.mcp_servers !== undefined)
    snapshot.mcp_servers = agents.sealMcp(ref.mcp_servers, pinned.mcp_servers, 'agent.mcp_servers');
  // The session's environment is its own environment_id; the agent's default is not checked here.
  const { id: _id, version: _v, ...spec } = snapshot;
  const skills = await agents
    .validateSpec(tenant, { ...spec, environment_id: null })
    .catch((err) => {
      throw underAgent(err);
    });
  return withPinnedSkills(snapshot, skills);
}

/** The snapshot with its skills pinned: refs show the pinned version (./skills.ts). */
function withPinnedSkills(
  snapshot: SessionAgentSnapshot,
  skills: SessionAgentSnapshot['pinned_skills'] & object,
): SessionAgentSnapshot {
  if (!skills.length) return snapshot;
  return { ...snapshot, skills: pinnedRefs(skills), pinned_skills: skills };
}

/**
 * The MCP server checks (AgentService checkMcpServers: unique names, every mcp_toolset naming a
 * server, every server named by one mcp_toolset) on a session's agent after an update; a
 * failure is a 400 naming `agent.<field>`.
 */
export function checkSessionAgentMcp(
  tools: SessionAgentSnapshot['tools'],
  mcpServers: SessionAgentSnapshot['mcp_servers'],
): void {
  try {
    checkMcpServers({ tools, mcp_servers: mcpServers });
  } catch (err) {
    throw underAgent(err);
  }
}
