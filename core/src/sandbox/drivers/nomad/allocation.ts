/**
 * Reading Nomad's answers for the Nomad sandbox driver (driver.ts): the exit of a terminal
 * allocation (137 for an OOM kill), the address of its `agent` port, and the reasons a
 * placement or a task start failed, in words.
 * Tested in core/test/sandbox.nomad.test.ts (allocationExit, placement and start failures).
 */
import { constants as osConstants } from 'node:os';
import {
  AGENT_PORT_LABEL,
  SANDBOX_TASK,
  type Allocation,
  type Evaluation,
} from '@agentfleet/nomad';

const SIGNAL_NAMES = Object.fromEntries(
  Object.entries(osConstants.signals).map(([k, v]) => [v, k]),
) as Record<number, string>;

/** The exit of a terminal allocation, from its task's last `Terminated` event. */
export function allocationExit(
  alloc: Allocation,
  task = SANDBOX_TASK,
): { code: number | null; signal: string | null } {
  const events = alloc.TaskStates?.[task]?.Events ?? [];
  const term = [...events].reverse().find((e) => e.Type === 'Terminated');
  if (!term) return { code: null, signal: null };
  const oom = term.Details?.oom_killed === 'true';
  const signal = term.Signal
    ? (SIGNAL_NAMES[term.Signal] ?? `SIG${term.Signal}`)
    : oom
      ? 'SIGKILL'
      : null;
  return { code: oom ? 137 : (term.ExitCode ?? null), signal };
}

/** The `agent` port of an allocation: host mode (Shared.Ports / network DynamicPorts) or the network status address. */
export function agentAddress(
  alloc: Allocation,
  label = AGENT_PORT_LABEL,
): { host: string; port: number } | null {
  const shared = alloc.AllocatedResources?.Shared;
  const mapped = shared?.Ports?.find((p) => p.Label === label);
  if (mapped?.Value)
    return {
      host: mapped.HostIP || alloc.NetworkStatus?.Address || '127.0.0.1',
      port: mapped.Value,
    };
  for (const n of shared?.Networks ?? []) {
    const p =
      n.DynamicPorts?.find((d) => d.Label === label) ??
      n.ReservedPorts?.find((d) => d.Label === label);
    if (p?.Value && n.IP) return { host: n.IP, port: p.Value };
  }
  return null;
}

export function describePlacementFailure(ev: Evaluation): string {
  const parts: string[] = [];
  for (const [group, m] of Object.entries(ev.FailedTGAllocs ?? {})) {
    const reasons: string[] = [];
    if (!m.NodesEvaluated && !Object.keys(m.NodesAvailable ?? {}).length)
      reasons.push("no nodes in the job's datacenters/node pool");
    for (const [k, n] of Object.entries(m.ConstraintFiltered ?? {}))
      reasons.push(`${n} node(s) filtered: ${k}`);
    for (const [k, n] of Object.entries(m.ClassFiltered ?? {}))
      reasons.push(`${n} node(s) of class ${k} filtered`);
    for (const [k, n] of Object.entries(m.DimensionExhausted ?? {}))
      reasons.push(`${n} node(s) exhausted ${k}`);
    parts.push(`${group}: ${reasons.join('; ') || 'no node fits'}`);
  }
  return parts.join(' | ');
}

export function describeTaskFailure(alloc: Allocation): string {
  const events = alloc.TaskStates?.[SANDBOX_TASK]?.Events ?? [];
  return events
    .slice(-4)
    .map((e) =>
      [e.Type, e.DisplayMessage || e.Message, e.DriverError, e.SetupError]
        .filter(Boolean)
        .join(': '),
    )
    .join('; ');
}
