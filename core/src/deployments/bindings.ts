/**
 * Create/update checks of what a deployment binds, each a 400 naming its field (the SDK: "The
 * agent must exist and not be archived"): the agent (an id pins its current version; an object
 * may pin an older one), the environment (not found / archived, with the SDK error codes),
 * `vault_ids[i]` (the tenant's live vaults), `resources[i]` (files only: a github_repository or
 * memory_store has no materializer here, and a self_hosted environment mounts nothing), the
 * agent's tools on a self_hosted environment (`agent.tools[i].execution`,
 * `agent.mcp_servers[i].type`, as session create refuses them),
 * `initial_events[i]` (the send-time checks of core/src/sessions/inputEvents.ts) and `budget`.
 * Another tenant's ids are "not found", like missing ones. Proved by test/e2e/deployments/deployments.test.ts
 * ("bad input").
 */
import type {
  AgentSpec,
  DeploymentInitialEvent,
  DeploymentResourceParam,
} from '@agentfleet/schemas';
import { ApiError, invalid, withErrorCode } from '../errors.js';
import type { Collections } from '../store/collections.js';
import type { EnvironmentDoc } from '../environments/records.js';
import { checkVaultIds } from '../vaults/vaults.js';
import { checkInputEvents } from '../sessions/inputEvents.js';
import { checkCreateBudget } from '../sessions/budget.js';
import { notSupportedYet, refuseOnSelfHosted } from '../api/unsupported.js';
import type { DeploymentDoc } from './records.js';

export type AgentParam = string | { type: 'agent'; id: string; version?: number };

/** The agent pinned to a concrete version; 400 naming `agent` or `agent.version`. */
export async function resolveAgent(
  c: Collections,
  tenant: string,
  param: AgentParam,
): Promise<{ id: string; version: number; modelId: string; spec: AgentSpec }> {
  const ref = typeof param === 'string' ? { id: param } : param;
  const doc = await c.agents.get(tenant, ref.id);
  if (!doc) throw invalid('agent', `agent ${ref.id} not found`);
  if (doc.archived_at) throw invalid('agent', `agent ${ref.id} is archived`);
  const version = 'version' in ref && ref.version !== undefined ? ref.version : doc.version;
  if (version === doc.version)
    return { id: doc._id, version, modelId: doc.spec.model.id, spec: doc.spec };
  const old =
    version < doc.version
      ? await c.agentVersions.findOne(tenant, { agent_id: ref.id, version })
      : null;
  if (!old) throw invalid('agent.version', `agent ${ref.id} has no version ${version}`);
  return { id: doc._id, version, modelId: old.spec.model.id, spec: old.spec };
}

export async function resolveEnvironment(
  c: Collections,
  tenant: string,
  id: string,
): Promise<EnvironmentDoc> {
  const env = await c.environments.get(tenant, id);
  if (!env)
    throw withErrorCode(
      invalid('environment_id', `environment ${id} not found`),
      'environment_not_found',
    );
  if (env.archived_at)
    throw withErrorCode(
      invalid('environment_id', `environment ${id} is archived`),
      'environment_archived',
    );
  return env;
}

export async function checkResources(
  c: Collections,
  tenant: string,
  env: EnvironmentDoc,
  resources: DeploymentResourceParam[],
): Promise<DeploymentDoc['resources']> {
  const out: DeploymentDoc['resources'] = [];
  for (const [i, r] of resources.entries()) {
    if (r.type !== 'file')
      throw notSupportedYet(`resources[${i}].type`, `${String(r.type)} resources on deployments`);
    const f = r as { file_id: string; mount_path?: string | null };
    if (!(await c.files.get(tenant, f.file_id)))
      throw invalid(`resources[${i}].file_id`, `file ${f.file_id} not found`);
    const mount = f.mount_path ?? null;
    if (mount !== null && (!mount.startsWith('/') || mount.split('/').includes('..')))
      throw invalid(`resources[${i}].mount_path`, 'must be an absolute path without ..');
    out.push({
      type: 'file',
      file_id: f.file_id,
      ...(mount !== null ? { mount_path: mount } : {}),
    });
  }
  if (out.length && env.kind === 'self_hosted')
    throw invalid('resources', `environment ${env._id} is self_hosted and cannot mount resources`);
  return out;
}

/** The send-time event checks, with their field renamed `initial_events[i]…`. */
export async function checkInitialEvents(
  c: Collections,
  tenant: string,
  events: DeploymentInitialEvent[],
): Promise<void> {
  try {
    await checkInputEvents(c, tenant, events);
  } catch (err) {
    if (!(err instanceof ApiError) || typeof err.details?.field !== 'string') throw err;
    const rename = (s: string) => s.replace(/^events\[/, 'initial_events[');
    const field = rename(err.details.field);
    throw new ApiError(err.type, rename(err.message), { ...err.details, field });
  }
}

/**
 * What a session on `env` refuses of the pinned agent (a self_hosted environment runs no
 * platform sandbox: sandbox/http custom tools and stdio MCP servers), refused here instead of at
 * every run (agent versions are pinned and an environment's kind never changes).
 */
export function checkAgentOnEnvironment(spec: AgentSpec, env: EnvironmentDoc): void {
  refuseOnSelfHosted(env.kind, spec);
}

export { checkVaultIds, checkCreateBudget };
