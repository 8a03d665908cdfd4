/**
 * The agent's `multiagent` setting (create and update), checked field by field before anything
 * is stored. Session threads are not built here yet, so no multiagent form is accepted; but
 * every rule the SDK states is checked first, so a caller learns exactly which field is wrong
 * (test/e2e/agents/multiagent-roster.test.ts). The `coordinator` form is accepted (session
 * threads: core/src/threads) and stored resolved, as the SDK's BetaManagedAgentsMultiagentCoordinator
 * says: every entry `{type: 'agent', id, version}`, a string or unversioned entry at the agent's
 * current version, `self` at the version being written ({@link resolveRoster}):
 *
 * - `coordinator` (SDK BetaManagedAgentsMultiagentCoordinatorParams): `agents` is 1–20 roster
 *   entries, each an agent id string, `{type: 'agent', id, version?}` (version an integer ≥ 1
 *   that exists), `{type: 'self'}` or `{type: 'advisor', model}`; entries name distinct agents
 *   once `self` and the string form are resolved; at most one `self` and one advisor; every
 *   referenced agent exists in the tenant (another tenant's id is "not found"), is not archived
 *   and has no `multiagent` itself (depth 1). The advisor entry is refused by name.
 * - `multiagent_20261001` (SDK BetaManagedAgentsMultiagent20261001Params): `advisor`,
 *   `subagents` and `workflows` are each `{type: 'enabled' | 'disabled'}` (advisor enabled
 *   carries `model`; subagents and workflows default to enabled); each enabled one is refused by
 *   its own field, and the form with all three disabled is refused on `multiagent.type` (it is a
 *   single-threaded agent: send `multiagent: null`).
 * - null (or absent) means single-threaded and is accepted.
 */
import type { Collections } from '../store/collections.js';
import { invalid } from '../errors.js';
import { notSupportedYet } from '../api/unsupported.js';

const MAX_ROSTER = 20;
/** The tools a coordinator's primary thread gets (workers/src/turn/threads.ts). */
export const COORDINATOR_TOOL_NAMES = ['start_thread', 'send_to_thread'];
const FORMS = ['coordinator', 'multiagent_20261001'];

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Answers the agent a roster entry names, or null when the tenant has none by that id. */
export type RosterLookup = (
  tenant: string,
  id: string,
  version?: number,
) => Promise<{
  archived: boolean;
  multiagent: unknown;
  versionFound: boolean;
  /** The version the entry resolves to (the named one, else the current). */
  version: number;
} | null>;

/** A stored roster entry; `self` only until {@link resolveRoster} names the version written. */
export type RosterEntry = { type: 'agent'; id: string; version: number } | { type: 'self' };
export interface Coordinator {
  type: 'coordinator';
  agents: RosterEntry[];
}

export function rosterLookup(c: Pick<Collections, 'agents' | 'agentVersions'>): RosterLookup {
  return async (tenant, id, version) => {
    const doc = await c.agents.get(tenant, id);
    if (!doc) return null;
    const pinned =
      version === undefined || version === doc.version
        ? doc.spec
        : ((await c.agentVersions.findOne(tenant, { agent_id: id, version }))?.spec ?? null);
    return {
      archived: !!doc.archived_at,
      multiagent: (pinned ?? doc.spec).multiagent ?? null,
      versionFound: !!pinned && (version ?? doc.version) <= doc.version,
      version: version ?? doc.version,
    };
  };
}

/**
 * Throws the 400 for `value`, else answers it as stored: null / undefined as given, a coordinator
 * with its entries resolved (`self` kept for {@link resolveRoster}). `selfId` is the agent being
 * updated (undefined on create: a new agent is distinct from every existing one).
 */
export async function checkMultiagent(
  lookup: RosterLookup,
  tenant: string,
  value: unknown,
  selfId?: string,
): Promise<Coordinator | null | undefined> {
  if (value === undefined || value === null) return value;
  if (!isObj(value)) throw invalid('multiagent', 'must be an object or null');
  const type = value.type;
  if (typeof type !== 'string' || !FORMS.includes(type))
    throw invalid('multiagent.type', `must be one of ${FORMS.join(', ')}`);
  if (type === 'coordinator') return checkCoordinator(lookup, tenant, value, selfId);
  checkMultiagent20261001(value);
  return null; // unreachable: every multiagent_20261001 form is refused
}

/**
 * The coordinator as stored for the agent version being written (`id` at `version`, whose
 * `tools` are `tools`): `self` (or an entry naming `id`, kept from an earlier version) becomes
 * that version; the coordinator's own custom tools cannot take a thread tool's name.
 */
export function resolveRoster(
  value: unknown,
  id: string,
  version: number,
  tools: unknown[],
): Coordinator | null | undefined {
  if (!isObj(value) || value.type !== 'coordinator') return value as null | undefined;
  // The coordinator's thread tools (workers/src/turn/threads.ts) take these names.
  (tools as Obj[]).forEach((t, i) => {
    if (t.type === 'custom' && COORDINATOR_TOOL_NAMES.includes(String(t.name)))
      throw invalid(
        `tools[${i}].name`,
        `${String(t.name)} is the name of a coordinator's thread tool`,
      );
  });
  const agents = (value.agents as RosterEntry[]).map((e, i): RosterEntry => {
    if (e.type !== 'self' && e.id !== id) return e;
    return { type: 'agent', id, version };
  });
  return { type: 'coordinator', agents };
}

/** `spec` with its roster resolved for agent `id` at `version` ({@link resolveRoster}). */
export const rosterAt = <S extends { multiagent?: unknown; tools: unknown[] }>(
  spec: S,
  id: string,
  version: number,
): S => ({ ...spec, multiagent: resolveRoster(spec.multiagent, id, version, spec.tools) ?? null });

async function checkCoordinator(
  lookup: RosterLookup,
  tenant: string,
  value: Obj,
  selfId?: string,
): Promise<Coordinator> {
  unknownKeys(value, ['type', 'agents'], 'multiagent');
  const agents = value.agents;
  if (!Array.isArray(agents) || agents.length < 1 || agents.length > MAX_ROSTER)
    throw invalid('multiagent.agents', `must be an array of 1 to ${MAX_ROSTER} roster entries`);
  const seen = new Set<string>();
  const resolved: RosterEntry[] = [];
  let selves = 0;
  let advisors = 0;
  for (let i = 0; i < agents.length; i++) {
    const field = `multiagent.agents[${i}]`;
    const entry = agents[i];
    let id: string;
    let version: number | undefined;
    if (typeof entry === 'string') {
      if (!entry) throw invalid(field, 'an agent id must not be empty');
      id = entry;
    } else if (!isObj(entry)) {
      throw invalid(field, "must be an agent id, {type: 'agent', id, version?} or {type: 'self'}");
    } else if (entry.type === 'self') {
      unknownKeys(entry, ['type'], field);
      if (++selves > 1) throw invalid(field, "at most one {type: 'self'} entry is allowed");
      resolved.push({ type: 'self' });
      if (!selfId) continue; // a new agent is distinct from every existing one
      id = selfId;
    } else if (entry.type === 'advisor') {
      unknownKeys(entry, ['type', 'model'], field);
      if (typeof entry.model !== 'string' || !entry.model)
        throw invalid(`${field}.model`, 'must be a model id');
      if (++advisors > 1) throw invalid(field, 'at most one advisor entry is allowed');
      continue; // refused below, once the rest of the roster is known to be valid
    } else if (entry.type === 'agent') {
      unknownKeys(entry, ['type', 'id', 'version'], field);
      if (typeof entry.id !== 'string' || !entry.id)
        throw invalid(`${field}.id`, 'must be an agent id');
      if (
        entry.version !== undefined &&
        (!Number.isInteger(entry.version) || (entry.version as number) < 1)
      )
        throw invalid(`${field}.version`, 'must be an integer of at least 1');
      id = entry.id;
      version = entry.version as number | undefined;
    } else {
      throw invalid(`${field}.type`, "must be 'agent', 'self' or 'advisor'");
    }
    const at = typeof entry === 'string' ? field : `${field}.id`;
    if (seen.has(id)) throw invalid(at, `agent ${id} is already in the roster`);
    seen.add(id);
    if (id === selfId) {
      // The agent being updated, named by id: its new spec is what it will run.
      if (entry === id || (isObj(entry) && entry.type === 'agent' && entry.version === undefined))
        resolved.push({ type: 'self' });
      else if (isObj(entry) && entry.type === 'agent')
        throw invalid(`${field}.version`, `name the agent being updated as {type: 'self'}`);
      continue;
    }
    const found = await lookup(tenant, id, version);
    if (!found) throw invalid(at, `agent ${id} not found`);
    if (version !== undefined && !found.versionFound)
      throw invalid(`${field}.version`, `agent ${id} has no version ${version}`);
    if (found.archived) throw invalid(at, `agent ${id} is archived`);
    if (found.multiagent !== null && found.multiagent !== undefined)
      throw invalid(at, `agent ${id} has multiagent set itself (a roster is one level deep)`);
    resolved.push({ type: 'agent', id, version: found.version });
  }
  const advisorAt = agents.findIndex((e) => isObj(e) && e.type === 'advisor');
  if (advisorAt >= 0)
    throw notSupportedYet(`multiagent.agents[${advisorAt}]`, 'the advisor roster entry');
  return { type: 'coordinator', agents: resolved };
}

function checkMultiagent20261001(value: Obj): void {
  unknownKeys(value, ['type', 'advisor', 'subagents', 'workflows'], 'multiagent');
  const advisor = toggle(value, 'advisor', 'disabled', ['model']);
  if (advisor === 'enabled' && typeof (value.advisor as Obj).model !== 'string')
    throw invalid('multiagent.advisor.model', 'must be a model id');
  const subagents = toggle(value, 'subagents', 'enabled', ['inline_agents', 'predefined_agents']);
  const workflows = toggle(value, 'workflows', 'enabled', ['inline_agents', 'predefined_agents']);
  if (subagents === 'enabled')
    throw notSupportedYet('multiagent.subagents', 'multiagent_20261001 subagents');
  if (workflows === 'enabled')
    throw notSupportedYet('multiagent.workflows', 'multiagent_20261001 workflows');
  if (advisor === 'enabled')
    throw notSupportedYet('multiagent.advisor', 'the multiagent_20261001 advisor');
  throw invalid(
    'multiagent.type',
    'multiagent_20261001 with advisor, subagents and workflows all disabled is a single-threaded agent: send multiagent: null',
  );
}

/** An `{type: 'enabled' | 'disabled', ...}` switch; null or absent takes the SDK's default. */
function toggle(value: Obj, key: string, byDefault: string, enabledKeys: string[]): string {
  const v = value[key];
  if (v === undefined || v === null) return byDefault;
  const field = `multiagent.${key}`;
  if (!isObj(v) || (v.type !== 'enabled' && v.type !== 'disabled'))
    throw invalid(`${field}.type`, "must be 'enabled' or 'disabled'");
  unknownKeys(v, v.type === 'enabled' ? ['type', ...enabledKeys] : ['type'], field);
  return v.type;
}

function unknownKeys(v: Obj, allowed: string[], field: string): void {
  for (const k of Object.keys(v))
    if (!allowed.includes(k)) throw invalid(`${field}.${k}`, 'is not a known field');
}
