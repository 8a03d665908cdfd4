/**
 * Settings the SDK can send that this deployment has not built yet are refused with a 400
 * naming the field, never stored silently. Proved by
 * test/e2e/agents/unsupported-fields.test.ts.
 */
import { isRepositoryType } from '../repositories/records.js';
import { invalid } from '../errors.js';

export const notSupportedYet = (field: string, what: string) =>
  invalid(field, `${what} is not supported yet by this deployment`);

/** Input event types the SDK defines that the turn runner does not handle yet. */
const UNBUILT_EVENT_TYPES: Record<string, string> = {
  // user.tool_result is served for self_hosted sessions only: core/src/domain/inputEvents.ts.
};

/** Checked on the raw body before schema validation, so the answer names the unbuilt feature. */
export function refuseUnbuiltEvents(body: unknown): void {
  const events = (body as { events?: unknown } | null)?.events;
  if (!Array.isArray(events)) return;
  events.forEach((e, i) => {
    const type = (e as { type?: unknown } | null)?.type;
    if (typeof type === 'string' && UNBUILT_EVENT_TYPES[type])
      throw notSupportedYet(`events[${i}].type`, UNBUILT_EVENT_TYPES[type]!);
  });
}

/**
 * `execution_identity` (agent create/update): runs carry no customer-named principal here, so
 * `service_account` (the default) is the only identity; `aws_role` would need cloud credential
 * federation this deployment does not have.
 */
export function refuseExecutionIdentity(value: unknown): void {
  const type = (value as { type?: unknown } | null | undefined)?.type;
  if (type !== undefined && type !== 'service_account')
    throw notSupportedYet('execution_identity.type', `execution identity '${String(type)}'`);
}

/**
 * Memory store `vector_index` (create/update; the spec's "index name"): every store has its own
 * search index, built per (tenant, store) from the store's persisted vectors and named by the
 * platform (served as `vector_index`). An index chosen by the caller (shared with another store,
 * or living in an external vector database) is not something this deployment can honour, so
 * any non-null value is refused; null means "the platform's" and is accepted. Proved by
 * test/e2e/memory/memory-vector-index.test.ts.
 */
export function refuseVectorIndex(value: unknown): void {
  if (value !== undefined && value !== null)
    throw notSupportedYet(
      'vector_index',
      "choosing a memory store's vector index (each store has its own index, named by the platform and served as vector_index)",
    );
}

/**
 * Environment `scope`: a tenant is one organization with no per-account visibility, so only
 * `organization` is served (the SDK: "API organizations support only 'organization'; 'account'
 * is rejected").
 */
export function refuseAccountScope(value: unknown): void {
  if (value === 'account')
    throw notSupportedYet('scope', "account-scoped environments (scope 'account')");
}

/**
 * What a session on a `self_hosted` environment cannot carry (the ama_worker lane: the loop runs
 * in the control plane, the customer's worker executes the agent toolset, and the platform
 * starts no sandbox for it). Refused at create (and on session update of the agent) with a 400
 * naming the field, before anything is allocated (spec "Work item lifecycle" rules 1 and 3):
 * - a custom tool with `execution` (sandbox or http): it runs in the platform's sandbox;
 * - a `stdio` MCP server: stdio works only when an external worker owns the child process, and
 *   this lane keeps the harness outside the worker ("rejected explicitly");
 * - a `github_repository` resource: it makes credential egress mandatory, and a self-hosted
 *   worker has no verified enforcement point here (no repository token is ever handed over).
 * `file` resources are accepted: the worker reads them with its claimed-session bearer (spec
 * capability table). Proved by test/e2e/work/self-hosted-lane.test.ts.
 */
export function refuseOnSelfHosted(
  kind: string | undefined,
  agent: { tools?: readonly unknown[] | null; mcp_servers?: readonly unknown[] | null },
  resources: readonly unknown[] = [],
  prefix = 'agent.',
): void {
  if (kind !== 'self_hosted') return;
  (agent.tools ?? []).forEach((t, i) => {
    const tool = t as { type?: string; name?: string; execution?: { type?: string } | null };
    if (tool?.type === 'custom' && tool.execution)
      throw notSupportedYet(
        `${prefix}tools[${i}].execution`,
        `custom tool '${tool.name}' runs in the platform's sandbox (execution '${tool.execution.type}'), and a self_hosted environment has none (the worker executes only the agent toolset); running it on a self_hosted environment`,
      );
  });
  (agent.mcp_servers ?? []).forEach((m, i) => {
    if ((m as { type?: string })?.type === 'stdio')
      throw notSupportedYet(
        `${prefix}mcp_servers[${i}].type`,
        `a stdio MCP server on a self_hosted environment (stdio needs a worker that owns the child process; here the agent loop runs in the control plane, outside the worker)`,
      );
  });
  resources.forEach((r, i) => {
    if (isRepositoryType((r as { type?: string })?.type))
      throw notSupportedYet(
        `resources[${i}].type`,
        'a repository resource on a self_hosted environment (it requires credential egress, and a self-hosted worker has no verified credential-injection point in this deployment)',
      );
  });
}
