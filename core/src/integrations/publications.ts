/**
 * Publication create bodies: which agent (pinned version or latest), environment and vaults
 * serve which workspace of an integration, on which triggers, with which capabilities.
 *
 * Guarantees (test/e2e/integrations/integrations-api.test.ts "publications"):
 * - every field is checked and a bad one is a 400 naming it; an unknown field is a 400 (nothing
 *   is stored and ignored);
 * - the agent, environment and vaults must exist in the tenant and not be archived;
 * - `workspace` keys are the integration's (github owner + optional repo; linear team_id or
 *   team_key; slack channel), string values of at most 200 characters;
 * - `triggers` are the integration's own (default: all but `label`); `label` is required with
 *   the `label` trigger and refused without it;
 * - `capabilities` is an allowlist of what the agent does back: `reply` (post its answers in
 *   the thread, the default) and the integration's actions (GitHub `pull_request`, Linear
 *   `state_change`: ./actions.ts), which are opt-in; any other is refused as not supported by
 *   that integration. `[]` runs the agent without posting anything.
 */
import { invalid } from '../errors.js';
import { newId } from '../ids.js';
import type { Collections } from '../store/collections.js';
import { nowIso } from '../util.js';
import { checkVaultIds } from '../vaults/vaults.js';
import type { IntegrationId, Trigger } from './port.js';
import type { PublicationDoc } from './records.js';

const WORKSPACE_KEYS: Record<IntegrationId, { required: string[]; optional: string[] }> = {
  github: { required: ['owner'], optional: ['repo'] },
  linear: { required: [], optional: ['team_id', 'team_key'] },
  slack: { required: [], optional: ['channel'] },
};
export const TRIGGERS: Record<IntegrationId, Trigger[]> = {
  github: ['mention', 'assignment', 'label'],
  linear: ['mention', 'assignment', 'label'],
  slack: ['mention', 'direct_message'],
};
const FIELDS = new Set([
  'agent',
  'environment_id',
  'vault_ids',
  'workspace',
  'triggers',
  'label',
  'capabilities',
]);

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const shortString = (v: unknown, max = 200): v is string =>
  typeof v === 'string' && v.length > 0 && v.length <= max;

function agentRef(v: unknown): { id: string; version: number | null } {
  if (typeof v === 'string' && shortString(v)) return { id: v, version: null };
  if (isObj(v) && shortString(v.id) && (v.type === undefined || v.type === 'agent')) {
    const extra = Object.keys(v).find((k) => !['id', 'type', 'version'].includes(k));
    if (extra) throw invalid(`agent.${extra}`, 'is not a field of an agent reference');
    if (v.version === undefined || v.version === null) return { id: v.id, version: null };
    if (!Number.isInteger(v.version) || (v.version as number) < 1)
      throw invalid('agent.version', 'must be a positive integer');
    return { id: v.id, version: v.version as number };
  }
  throw invalid('agent', 'must be an agent id or {type: "agent", id, version?}');
}

export async function checkPublication(
  c: Collections,
  tenant: string,
  integration: IntegrationId,
  body: unknown,
  /** The integration's capabilities: `reply` and its provider actions' (./port.ts). */
  supported: readonly string[],
): Promise<Omit<PublicationDoc, 'tenant_id'>> {
  if (!isObj(body)) throw invalid('body', 'must be a JSON object');
  for (const k of Object.keys(body))
    if (!FIELDS.has(k))
      throw invalid(k, `is not a field of a publication (fields: ${[...FIELDS].join(', ')})`);

  const agent = agentRef(body.agent);
  const a = await c.agents.get(tenant, agent.id);
  if (!a) throw invalid('agent', `agent ${agent.id} not found`);
  if (a.archived_at) throw invalid('agent', `agent ${agent.id} is archived`);
  if (agent.version !== null && agent.version > a.version)
    throw invalid('agent.version', `agent ${agent.id} has no version ${agent.version}`);

  if (!shortString(body.environment_id))
    throw invalid('environment_id', 'is required (an env_… id)');
  const env = await c.environments.get(tenant, body.environment_id);
  if (!env) throw invalid('environment_id', `environment ${body.environment_id} not found`);
  if (env.archived_at) throw invalid('environment_id', `environment ${env._id} is archived`);

  let vaultIds: string[] = [];
  if (body.vault_ids !== undefined) {
    if (!Array.isArray(body.vault_ids) || body.vault_ids.length > 20)
      throw invalid('vault_ids', 'must be an array of at most 20 vault ids');
    body.vault_ids.forEach((v, i) => {
      if (!shortString(v)) throw invalid(`vault_ids[${i}]`, 'must be a vault id');
    });
    vaultIds = body.vault_ids as string[];
    await checkVaultIds(c, tenant, vaultIds);
  }

  const keys = WORKSPACE_KEYS[integration];
  const ws = body.workspace ?? {};
  if (!isObj(ws)) throw invalid('workspace', 'must be an object');
  const workspace: Record<string, string> = {};
  for (const [k, v] of Object.entries(ws)) {
    if (![...keys.required, ...keys.optional].includes(k))
      throw invalid(
        `workspace.${k}`,
        `is not a workspace key of ${integration} (keys: ${[...keys.required, ...keys.optional].join(', ')})`,
      );
    if (!shortString(v))
      throw invalid(`workspace.${k}`, 'must be a non-empty string of at most 200 characters');
    workspace[k] = v;
  }
  for (const k of keys.required)
    if (!workspace[k]) throw invalid(`workspace.${k}`, `is required for ${integration}`);

  const allowed = TRIGGERS[integration];
  let triggers: Trigger[] = allowed.filter((t) => t !== 'label');
  if (body.triggers !== undefined) {
    if (!Array.isArray(body.triggers) || body.triggers.length === 0)
      throw invalid('triggers', `must be a non-empty array of ${allowed.join(', ')}`);
    body.triggers.forEach((t, i) => {
      if (!allowed.includes(t as Trigger))
        throw invalid(`triggers[${i}]`, `must be one of ${allowed.join(', ')} for ${integration}`);
    });
    triggers = [...new Set(body.triggers as Trigger[])];
  }
  let label: string | null = null;
  if (body.label !== undefined && body.label !== null) {
    if (!shortString(body.label, 100))
      throw invalid('label', 'must be a label name (1–100 characters)');
    if (!triggers.includes('label')) throw invalid('label', 'is only used with the label trigger');
    label = body.label;
  }
  if (triggers.includes('label') && !label)
    throw invalid('label', 'is required with the label trigger');

  let capabilities: string[] = ['reply'];
  if (body.capabilities !== undefined) {
    if (!Array.isArray(body.capabilities)) throw invalid('capabilities', 'must be an array');
    body.capabilities.forEach((cap, i) => {
      if (typeof cap !== 'string' || !supported.includes(cap))
        throw invalid(
          `capabilities[${i}]`,
          `${JSON.stringify(String(cap).slice(0, 40))} is not supported by ${integration} (supported: ${supported.join(', ')})`,
        );
    });
    capabilities = [...new Set(body.capabilities as string[])];
  }

  return {
    _id: newId('pub_'),
    integration,
    workspace,
    agent,
    environment_id: env._id,
    vault_ids: vaultIds,
    triggers,
    label,
    capabilities,
    created_at: nowIso(),
  };
}

/** Does the publication serve this event? Every workspace key it names must match. */
export function serves(
  p: PublicationDoc,
  e: { workspace: Record<string, string>; trigger: Trigger; labels: string[] },
): boolean {
  if (!p.triggers.includes(e.trigger)) return false;
  if (e.trigger === 'label' && !(p.label && e.labels.includes(p.label))) return false;
  return Object.entries(p.workspace).every(([k, v]) => e.workspace[k] === v);
}
