/**
 * Checks of the permission policies an agent's tools carry. Guarantee: a custom tool's
 * `permission_policy` (an extension: the SDK's custom tools have none) is accepted only where it
 * takes effect: on a server-executed custom tool (`execution` set) any policy is honoured by the
 * turn runner (workers/src/permissions.ts); on a client-executed one, whose calls the client
 * answers itself, only always_allow (or null) is accepted and anything else is a 400 naming
 * `tools[i].permission_policy` (`agent.tools[i]…` on a session update). Proven by test/permission-policy.test.ts.
 */
import { invalid } from '../errors.js';

export function checkToolPolicies(tools: readonly any[], field = 'tools'): void {
  (tools ?? []).forEach((t, i) => {
    const type = t?.type === 'custom' ? t.permission_policy?.type : undefined;
    if (type && type !== 'always_allow' && !t.execution)
      throw invalid(
        `${field}[${i}].permission_policy`,
        `${type} applies only to server-executed custom tools (with execution); the client answers the calls of client-executed tool ${t.name} itself`,
      );
  });
}
