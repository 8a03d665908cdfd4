/**
 * What the local driver can enforce on this host, and the limits a sandbox gets: from its
 * instance size (schemas/src/limits.ts), lowered by the operator's caps when given.
 *
 *   processes → cgroup pids.max        memory → cgroup memory limit (no swap)
 *   cpu       → cgroup CFS quota       disk   → a loop-mounted ext4 image (diskQuota.ts)
 *
 * The start-up check (`probeSandboxLimits`) tries each for real; the worker refuses to start
 * when none can be enforced (unless the operator turns limits off) and logs, by name, any that
 * cannot (tested in test/e2e/server/startup.test.ts and core/test/sandbox.limits.test.ts).
 */
import {
  detectCgroups,
  probeDiskQuota,
  type CgroupLayout,
  type SandboxLimitName,
} from '@agentfleet/sandbox-agent';

export type { SandboxLimitName };
export const SANDBOX_LIMIT_NAMES: SandboxLimitName[] = ['processes', 'memory', 'cpu', 'disk'];

export { sandboxResources, type SandboxLimitCaps } from '../../shared.js';

export interface SandboxLimitsProbe {
  /** Limits this host enforces. */
  enforced: SandboxLimitName[];
  /** Limits it cannot, with the reason. */
  missing: Array<{ limit: SandboxLimitName; reason: string }>;
  cgroups: CgroupLayout;
}

/** Tries every mechanism once (creates and removes a cgroup per controller, mounts a tiny image in `workDir`). */
export async function probeSandboxLimits(workDir: string): Promise<SandboxLimitsProbe> {
  const cgroups = detectCgroups();
  const missing: SandboxLimitsProbe['missing'] = [];
  const cg = { processes: 'pids', memory: 'memory', cpu: 'cpu' } as const;
  for (const [limit, controller] of Object.entries(cg) as Array<
    [SandboxLimitName, 'pids' | 'memory' | 'cpu']
  >) {
    if (!cgroups.parents[controller])
      missing.push({ limit, reason: cgroups.problems[controller] ?? `no '${controller}' cgroup` });
  }
  const disk = await probeDiskQuota(workDir);
  if (disk) missing.push({ limit: 'disk', reason: disk });
  const enforced = SANDBOX_LIMIT_NAMES.filter((n) => !missing.some((m) => m.limit === n));
  return { enforced, missing, cgroups };
}

export function describeMissing(probe: SandboxLimitsProbe): string {
  return probe.missing.map((m) => `${m.limit}: ${m.reason}`).join('; ');
}

/** Why the worker refuses to start when a host can enforce no limit at all. */
export function noLimitsMessage(probe: SandboxLimitsProbe): string {
  return (
    `the local sandbox driver cannot enforce any per-sandbox limit on this host (${describeMissing(probe)}): ` +
    'run the worker as root on a host with cgroups (v1 or v2: pids, memory, cpu) and loop devices (mkfs.ext4), ' +
    'or set SANDBOX_UNSAFE_NO_LIMITS=true to run sandboxes without limits (any tenant can then exhaust the host)'
  );
}
