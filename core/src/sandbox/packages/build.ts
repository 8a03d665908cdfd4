/**
 * The confined build of a package layer. Package installs run tenant-chosen code (npm install
 * scripts, setup.py, build.rs), so a build never runs in the server process or with its
 * environment: it runs in a bubblewrap sandbox like a session's (all namespaces, uid 1000, no
 * capabilities, an empty environment, the host's /usr and an /etc allowlist read-only, the
 * per-sandbox limits of a `small` instance when the host enforces them), with:
 * - the staging directory of the layer bound WRITABLE at SANDBOX_PACKAGES_DIR (the only host
 *   directory it can write, besides its own throw-away /tmp and home);
 * - no network but an outbound proxy that lets through ONLY the package registries of the
 *   managers being built (core/src/egress/registries.ts), after the platform's egress policy
 *   (private and metadata addresses refused);
 * - read-only: the host's apt sources, keys, lists and dpkg status (apt dependency resolution;
 *   never /etc/apt/auth.conf or apt.conf.d), and the Rust toolchain directory when cargo is
 *   used. Never the host's home, credentials or data dir.
 * Each manager runs with a timeout (default 10 min) and its output cut at 64 KiB; the layer is
 * refused past a size cap (default 2 GiB). A failure is a PackageBuildError naming the manager
 * and its packages, with the tail of the tool's output.
 *
 * Tested: test/e2e/environments/env-packages.test.ts (real registries: pip, npm, apt; a nonexistent package;
 * gem without a gem tool on the host; no host environment variable inside the build).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { Logger } from '../../log.js';
import type { SandboxDriver, SandboxHandle } from '../port.js';
import { PACKAGE_REGISTRY_HOSTS } from '../../egress/registries.js';
import type { EgressPolicy } from '../../egress/policy.js';
import { createOutboundProxy, hostPolicy } from '../../egress/proxy/proxy.js';
import { installScript, type BuildTools } from './builders.js';
import { SANDBOX_PACKAGES_DIR } from './layerEnv.js';
import { PACKAGE_MANAGERS, type PackageLists, type PackageManager } from './spec.js';

export const DEFAULT_BUILD_TIMEOUT_MS = 10 * 60_000;
export const DEFAULT_MAX_LAYER_MB = 2048;
const MAX_LOG_BYTES = 64 * 1024;
const SYSTEM_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

/** A layer could not be built: names the manager and the packages it was asked for. */
export class PackageBuildError extends Error {
  override readonly name = 'PackageBuildError';
  constructor(
    readonly manager: PackageManager | 'layer',
    readonly packages: string[],
    message: string,
  ) {
    super(message);
  }
}

/** The host paths a build sandbox sees read-only beyond a session's (those that exist here). */
export function buildReadOnlyBinds(tools: BuildTools): string[] {
  // apt's sources and keys only: never /etc/apt/auth.conf(.d) or apt.conf.d (credentials, proxies)
  const apt = [
    'sources.list',
    'sources.list.d',
    'trusted.gpg',
    'trusted.gpg.d',
    'keyrings',
    'preferences',
    'preferences.d',
  ];
  const paths = [...apt.map((f) => `/etc/apt/${f}`), '/var/lib/apt/lists', '/var/lib/dpkg'];
  if (tools.rustToolchain) paths.push(tools.rustToolchain);
  return paths.filter((p) => existsSync(p));
}

/** The host's Rust toolchain directory (rustup's active one, or the system's), or null. */
export function findRustToolchain(which: (cmd: string) => string | null): string | null {
  const rustc = which('rustc');
  if (!rustc) return null;
  // rustup's proxy needs HOME to find its toolchains; nothing else of this process's environment
  const r = spawnSync(rustc, ['--print', 'sysroot'], {
    encoding: 'utf8',
    timeout: 10_000,
    env: { HOME: homedir() },
  });
  const dir = r.status === 0 ? r.stdout.trim() : '';
  return dir && existsSync(join(dir, 'bin', 'cargo')) ? dir : null;
}

export interface LayerBuilderOptions {
  /** The bubblewrap driver builds run in (./wiring.ts): readOnlyBinds from buildReadOnlyBinds(),
   *  its proxy socket the one this build registers in `proxies`. */
  driver: SandboxDriver;
  /** Directory for the builds' proxy sockets. */
  socketDir: string;
  egress: EgressPolicy;
  tools: BuildTools;
  log: Logger;
  timeoutMs?: number;
  maxLayerMb?: number;
}

/** Registry hosts each build may reach, set before its sandbox starts (keyed by build id). */
export type BuildProxies = Map<string, { socketPath: string; close: () => Promise<void> }>;

const tail = (s: string, n = 1500) => (s.length > n ? `…${s.slice(-n)}` : s).trim();

/**
 * Builds `lists` into `stagingDir` (which must exist and be empty) in one confined sandbox.
 * `proxies` is shared with the driver's proxySocket hook: the build registers its registry-only
 * proxy there under its sandbox's session id before starting the sandbox.
 */
export async function buildLayer(
  o: LayerBuilderOptions,
  proxies: BuildProxies,
  lists: PackageLists,
  stagingDir: string,
): Promise<{ log: string }> {
  const managers = PACKAGE_MANAGERS.filter((m) => lists[m]?.length);
  const buildId = `pkgbuild-${randomBytes(6).toString('hex')}`;
  const socketPath = join(o.socketDir, `${buildId}.sock`);
  await fsp.mkdir(o.socketDir, { recursive: true, mode: 0o700 });
  const allow = managers.flatMap((m) => [...PACKAGE_REGISTRY_HOSTS[m]]);
  const proxy = await createOutboundProxy({
    listen: { socketPath },
    context: { tenantId: 'platform', sessionId: buildId },
    policy: hostPolicy({ allowlist: allow, unrestricted: false }),
    egress: o.egress,
    log: (entry) => o.log.debug('package build request', { ...entry }),
  });
  proxies.set(buildId, { socketPath, close: () => proxy.close() });
  let handle: SandboxHandle | null = null;
  const logParts: string[] = [];
  try {
    try {
      handle = await o.driver.start({
        tenantId: 'platform',
        sessionId: buildId,
        environmentId: 'packages',
        size: 'small',
        // the OS trust store for tools that bring their own (npm): the host's public CA bundle
        env: existsSync(SYSTEM_CA_BUNDLE) ? { NODE_EXTRA_CA_CERTS: SYSTEM_CA_BUNDLE } : {},
        proxyUrl: null,
        packages: { hostDir: stagingDir, writable: true },
      });
    } catch (err) {
      throw new PackageBuildError(
        'layer',
        [],
        `the package build sandbox could not start: ${(err as Error).message}`,
      );
    }
    for (const m of managers) {
      const names = lists[m]!;
      const r = await handle.api.exec({
        command: installScript(m, names, o.tools),
        timeoutMs: o.timeoutMs ?? DEFAULT_BUILD_TIMEOUT_MS,
        maxOutputBytes: MAX_LOG_BYTES,
      });
      const out = `${r.stdout}\n${r.stderr}`;
      logParts.push(`== ${m} ${names.join(' ')} (exit ${r.exitCode})\n${tail(out, 8000)}`);
      if (r.exitCode !== 0) {
        const why = r.timedOut
          ? `timed out after ${Math.round((o.timeoutMs ?? DEFAULT_BUILD_TIMEOUT_MS) / 1000)} s`
          : r.exitCode === 127 && /is not installed on this host|has no apt package lists/.test(out)
            ? tail(r.stderr, 300)
            : `exit ${r.exitCode ?? r.signal}: ${tail(r.stderr || r.stdout)}`;
        throw new PackageBuildError(
          m,
          names,
          `installing ${m} package${names.length > 1 ? 's' : ''} ${names.map((n) => `'${n}'`).join(', ')} failed: ${why}`,
        );
      }
    }
    const maxMb = o.maxLayerMb ?? DEFAULT_MAX_LAYER_MB;
    const du = await handle.api.exec({
      command: `du -sk ${SANDBOX_PACKAGES_DIR}`,
      timeoutMs: 60_000,
    });
    const kb = Number.parseInt(du.stdout, 10);
    const mb = Math.ceil(kb / 1024);
    if (Number.isFinite(kb) && kb > maxMb * 1024)
      throw new PackageBuildError(
        'layer',
        managers.flatMap((m) => lists[m]!),
        `the environment's packages take ${mb} MB, over the ${maxMb} MB a package layer may take`,
      );
    return { log: logParts.join('\n') };
  } finally {
    await handle?.destroy().catch(() => {});
    proxies.delete(buildId);
    await proxy.close().catch(() => {});
  }
}
