/**
 * The launcher's per-sandbox limits on the Nomad client (`--limits`): the same confinement as the
 * local driver (../limits/confinement.ts), with what the client cannot enforce written to stderr
 * by name. Proved by core/test/sandbox.nomad.test.ts ("limits on the client").
 */
import { mkdirSync } from 'node:fs';
import { detectCgroups, removeStaleCgroups } from '../limits/cgroups.js';
import { CGROUP_PREFIX, SandboxConfinement } from '../limits/confinement.js';
import { diskQuotaTools, isMountPoint, unmountDiskQuota } from '../limits/diskQuota.js';
import type { SandboxLimitName, SandboxResources, WarningLog } from '../limits/types.js';

/** Sets up what this client can enforce of `limits`; reports the rest on stderr by name. */
export async function confine(
  limits: SandboxResources,
  root: string | null,
): Promise<SandboxConfinement> {
  const cgroups = detectCgroups();
  removeStaleCgroups(cgroups, CGROUP_PREFIX);
  const tools = diskQuotaTools();
  const enforce = new Set<SandboxLimitName>();
  const missing: string[] = [];
  for (const [limit, controller] of [
    ['processes', 'pids'],
    ['memory', 'memory'],
    ['cpu', 'cpu'],
  ] as const) {
    if (cgroups.parents[controller]) enforce.add(limit);
    else missing.push(`${limit}: ${cgroups.problems[controller] ?? 'no cgroup'}`);
  }
  if (!root) missing.push('disk: no --sandbox-root');
  else if ('problem' in tools) missing.push(`disk: ${tools.problem}`);
  else enforce.add('disk');
  if (missing.length)
    process.stderr.write(
      `nomad-agent: sandbox limits NOT enforced on this client: ${missing.join('; ')}\n`,
    );
  if (root) {
    mkdirSync(root, { recursive: true });
    if ('tools' in tools && isMountPoint(root))
      await unmountDiskQuota(tools.tools, `${root}.img`, root);
  }
  const log = {
    warn: (msg: string, fields?: object) =>
      process.stderr.write(`nomad-agent: ${msg} ${JSON.stringify(fields ?? {})}\n`),
  } satisfies WarningLog;
  return SandboxConfinement.create({
    name: `nomad-${process.pid}`,
    hostDir: root ?? '',
    image: `${root}.img`,
    resources: limits,
    enforce,
    cgroups,
    disk: 'tools' in tools ? tools.tools : null,
    log,
  });
}
