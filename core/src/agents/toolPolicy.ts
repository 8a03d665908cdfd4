/**
 * Checks of the permission policies an agent's tools carry. Guarantees:
 * - `{type: 'auto'}` is refused wherever a policy goes (a toolset's `configs[j]` and
 *   `default_config`, an `mcp_toolset`'s, a custom tool's) with a 400 naming
 *   `….permission_policy.type` as not supported: the SDK defines auto as the server judging each
 *   call safe or high-risk, and this deployment has no such judge (proved by
 *   test/e2e/sandbox/permission-policy.test.ts › 'auto is refused').
 * - A custom tool's
 * `permission_policy` (an extension: the SDK's custom tools have none) is accepted only where it
 * takes effect: on a server-executed custom tool (`execution` set) any policy is honoured by the
 * turn runner (workers/src/tools/permissions.ts); on a client-executed one, whose calls the client
 * answers itself, only always_allow (or null) is accepted and anything else is a 400 naming
 * `tools[i].permission_policy` (`agent.tools[i]…` on a session update). Proven by test/e2e/sandbox/permission-policy.test.ts.
 */
import { invalid } from '../errors.js';
import { notSupportedYet } from '../api/unsupported.js';

const refuseAuto = (policy: unknown, field: string) => {
  if ((policy as { type?: unknown } | null | undefined)?.type === 'auto')
    throw notSupportedYet(
      `${field}.permission_policy.type`,
      "permission policy 'auto' (a per-call safety judgement by the server; use always_allow or always_ask)",
    );
};

export function checkToolPolicies(tools: readonly any[], field = 'tools'): void {
  (tools ?? []).forEach((t, i) => {
    refuseAuto(t?.permission_policy, `${field}[${i}]`);
    refuseAuto(t?.default_config?.permission_policy, `${field}[${i}].default_config`);
    if (Array.isArray(t?.configs))
      t.configs.forEach((c: any, j: number) =>
        refuseAuto(c?.permission_policy, `${field}[${i}].configs[${j}]`),
      );
  });
  (tools ?? []).forEach((t, i) => {
    const type = t?.type === 'custom' ? t.permission_policy?.type : undefined;
    if (type && type !== 'always_allow' && !t.execution)
      throw invalid(
        `${field}[${i}].permission_policy`,
        `${type} applies only to server-executed custom tools (with execution); the client answers the calls of client-executed tool ${t.name} itself`,
      );
  });
}
