/**
 * The package layers of a worker, wired: the cache under `<sandbox root>/packages`, builds in
 * bubblewrap sandboxes of their own (a local driver used only for builds, whatever driver runs
 * the sessions: layers are built on the worker), each build behind a proxy that reaches only
 * its managers' registries (./build.ts).
 *
 * Nomad: the layer is a directory on the worker, bound read-only into the task by the same
 * bwrap options (sandbox/drivers/bubblewrap/layout.ts), so it reaches an allocation only on a client
 * that shares the worker's paths (as node and the sandbox scripts already must; docs/sandboxes.md).
 * Tested: test/e2e/environments/env-packages.test.ts.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { LeaseStore } from '../../coordination/port.js';
import type { Logger } from '../../log.js';
import type { SandboxLimitCaps } from '../shared.js';
import type { EgressPolicy } from '../../egress/policy.js';
import type { SandboxHostUser } from '@agentfleet/sandbox-agent';
import { createLocalDriver } from '../drivers/bubblewrap/driver.js';
import { which } from '../drivers/bubblewrap/layout.js';
import {
  buildLayer,
  buildReadOnlyBinds,
  findRustToolchain,
  type BuildProxies,
  type LayerBuilderOptions,
} from './build.js';
import { createPackageLayers, type PackageLayers } from './layers.js';

export interface PackageLayerWiring {
  /** The sandbox root (config sandbox.rootDir): layers in packages/, builds in pkgbuild/. */
  rootDir: string;
  /** Per-sandbox limits for builds (as the sessions'); false: none. */
  limits: false | { caps?: SandboxLimitCaps };
  /** Host paths a build must not see even inside bound trees (the data dir). */
  hidePaths: string[];
  egress: EgressPolicy;
  log: Logger;
  timeoutMs?: number;
  maxLayerMb?: number;
  /** The coordination port's leases: one build per layer across workers (./layers.ts). */
  leases?: LeaseStore;
  /** The unprivileged host user builds run as under root (@agentfleet/sandbox-agent hostUser.ts). */
  hostUser?: SandboxHostUser | null;
}

export function createPackageLayerService(w: PackageLayerWiring): PackageLayers & {
  close(): Promise<void>;
} {
  const tools = { rustToolchain: findRustToolchain(which) };
  const proxies: BuildProxies = new Map();
  const driver = createLocalDriver({
    rootDir: join(w.rootDir, 'pkgbuild'),
    limits: w.limits,
    readOnlyBinds: buildReadOnlyBinds(tools),
    hidePaths: w.hidePaths,
    hostUser: w.hostUser ?? null,
    proxySocket: (spec) => {
      const p = proxies.get(spec.sessionId);
      return p ? { path: p.socketPath } : null;
    },
    log: w.log.child({ component: 'package-build-sandbox' }),
  });
  const builder: LayerBuilderOptions = {
    driver,
    socketDir: join(w.rootDir, 'pkgbuild-px'),
    egress: w.egress,
    tools,
    log: w.log,
    timeoutMs: w.timeoutMs,
    maxLayerMb: w.maxLayerMb,
  };
  const layers = createPackageLayers({
    cacheDir: join(w.rootDir, 'packages'),
    build: (lists, staging) => buildLayer(builder, proxies, lists, staging),
    log: w.log,
    leases: w.leases
      ? { store: w.leases, owner: `packages-${process.pid}-${randomBytes(4).toString('hex')}` }
      : undefined,
  });
  return {
    layerFor: (lists) => layers.layerFor(lists),
    get builds() {
      return layers.builds;
    },
    close: () => driver.close(),
  };
}
