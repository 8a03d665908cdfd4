/**
 * The sandbox driver of a worker, chosen from the typed config: SANDBOX_DRIVER=local (bubblewrap
 * on this machine, per-sandbox limits probed), nomad (one Nomad job per session running the
 * bundled launcher and agent), none (no sandbox runtime). A local start refuses a host without
 * bubblewrap or without any enforceable limit, with one message naming the fix
 * (test/e2e/server/startup.test.ts); sandboxes run through it in test/e2e/sandbox/sandbox-tools.test.ts and
 * test/e2e/server/built-output.test.ts, Nomad in test/nomad/.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { type Logger, type SandboxDriver, type SandboxDriverWiring } from '@agentfleet/core';
import {
  BWRAP_MISSING_MESSAGE,
  checkBubblewrap,
  checkHostUser,
  createLocalDriver,
  createNomadDriver,
  describeMissing,
  noLimitsMessage,
  nomadAgentCommand,
  nomadDockerMounts,
  probeSandboxLimits,
  sandboxProgram,
  type LocalLimitsOptions,
} from '@agentfleet/core/adapters';
import { NomadClient } from '@agentfleet/nomad';
import type { Platform } from './platform.js';

export type SandboxDriverFactory = (wiring: SandboxDriverWiring) => Promise<SandboxDriver>;

/** The driver factory the config names, or null for SANDBOX_DRIVER=none. */
export function sandboxDriverFor(p: Platform, log: Logger): SandboxDriverFactory | null {
  const cfg = p.config.sandbox;
  if (cfg.driver === 'none') return null;
  if (cfg.driver === 'local') return (wiring) => localDriver(p, log, wiring);
  return (wiring) => nomadDriver(p, log, wiring);
}

/** Bubblewrap on this machine, with the per-sandbox limits this host can enforce. */
export async function localDriver(
  p: Platform,
  log: Logger,
  wiring: SandboxDriverWiring,
): Promise<SandboxDriver> {
  const cfg = p.config.sandbox;
  const check = checkBubblewrap();
  if (!check.ok)
    throw new Error(
      `${check.message ?? BWRAP_MISSING_MESSAGE}. Or set SANDBOX_DRIVER=none to run without sandboxes (tools that need one then answer with an error).`,
    );
  // the sandbox host user: bwrap must create its namespaces as that user (unprivileged userns)
  const hostUserProblem = cfg.hostUser
    ? checkHostUser({ ...cfg.hostUser, within: [] }, 'bwrap')
    : null;
  if (hostUserProblem) throw new Error(hostUserProblem);
  const localRoot = join(cfg.rootDir, 'local');
  // Per-sandbox limits: refuse a host that can enforce none, name what is missing otherwise.
  let limits: LocalLimitsOptions | false = false;
  if (cfg.unsafeNoLimits)
    log.warn(
      'SANDBOX_UNSAFE_NO_LIMITS=true: sandboxes run without process, memory, CPU or disk limits',
    );
  else {
    mkdirSync(localRoot, { recursive: true, mode: 0o700 });
    const probe = await probeSandboxLimits(localRoot);
    if (probe.enforced.length === 0) throw new Error(noLimitsMessage(probe));
    if (probe.missing.length)
      log.warn(
        `sandbox limits NOT enforced on this host: ${probe.missing.map((m) => m.limit).join(', ')} (${describeMissing(probe)})`,
      );
    log.info('sandbox limits enforced', {
      limits: probe.enforced,
      cgroups: `v${probe.cgroups.version}`,
      caps: cfg.limitCaps,
    });
    limits = { probe, caps: cfg.limitCaps };
  }
  return createLocalDriver({
    rootDir: localRoot,
    limits,
    hidePaths: [p.config.dataDir],
    hostUser: cfg.hostUser ? { ...cfg.hostUser, within: [p.config.dataDir, cfg.rootDir] } : null,
    proxySocket: wiring.proxySocket,
    log: log.child({ component: 'sandbox-local' }),
  });
}

/**
 * One Nomad job per session. The job runs our launcher + bubblewrap + the agent with this
 * worker's node and scripts, so Nomad clients need the same paths (see docs/sandboxes.md). Sandboxes on
 * Nomad reach their session's outbound proxy over TCP at SANDBOX_NOMAD_PROXY_ADVERTISE (a
 * per-session password in the proxy URL, the egress CA in the sandbox's trust store); without
 * it they have no network (test/e2e/sandbox/sandbox-tools.test.ts runs both; the fake proves the job only).
 */
export async function nomadDriver(
  p: Platform,
  log: Logger,
  wiring: SandboxDriverWiring,
): Promise<SandboxDriver> {
  const cfg = p.config.sandbox;
  const n = cfg.nomad!;
  const scriptsDir = join(cfg.rootDir, 'scripts');
  const scripts = {
    launcher: await sandboxProgram('launcher', scriptsDir),
    agent: await sandboxProgram('agent', scriptsDir),
  };
  return createNomadDriver({
    client: new NomadClient({
      address: n.address,
      token: n.token ?? undefined,
      namespace: n.namespace ?? undefined,
      region: n.region ?? undefined,
    }),
    agentCommand: (spec, extra) =>
      nomadAgentCommand(spec, {
        node: process.execPath,
        launcher: scripts.launcher,
        agent: scripts.agent,
        limits: cfg.unsafeNoLimits ? false : { caps: cfg.limitCaps },
        trust: extra.trust,
        // applied by the launcher when it runs as root on the client
        hostUser: cfg.hostUser
          ? { ...cfg.hostUser, within: [p.config.dataDir, cfg.rootDir] }
          : null,
      }),
    proxy: cfg.nomadProxy ? (spec) => wiring.proxyEndpoint(spec, cfg.nomadProxy!) : undefined,
    // SANDBOX_NOMAD_BASE_IMAGES: a base_image runs with the docker task driver, these files bound into it
    job: cfg.nomadBaseImages
      ? { dockerMounts: nomadDockerMounts({ node: process.execPath, ...scripts }) }
      : undefined,
    limitCaps: cfg.limitCaps,
    log: log.child({ component: 'sandbox-nomad' }),
  });
}
