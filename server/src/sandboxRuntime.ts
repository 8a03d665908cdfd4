/**
 * The worker side of sandboxes, assembled on the driver the composition root chose
 * (./sandboxDriver.ts): the lifecycle manager, a proxy per session (a component of every
 * driver, not a deployment choice, so it is built here whatever the driver), the web tools
 * through that proxy, and destroy requests from gateways.
 *
 * Built in this order: what upstream TLS trusts (an unreadable EGRESS_CA_CERTS stops the worker
 * here), the session proxies (core/src/sandbox/proxies.ts; the egress CA is loaded on first
 * need, never at start), the driver on their wiring, the package layer service (builds in
 * bubblewrap sandboxes of its own), the manager with the session's resources, spec and
 * credential env (core/src/sandbox/runtime.ts), then the destroy subscription. `close()`
 * releases: the destroy subscription, the manager (its sandboxes), the driver, the proxies, the
 * package layer service.
 *
 * Proven by test/e2e/sandbox/sandbox-tools.test.ts (both drivers),
 * test/e2e/credentials/sandbox-credentials*.test.ts, sandbox-ca.test.ts and
 * test/e2e/environments/env-packages.test.ts.
 */
import { join } from 'node:path';
import {
  createSandboxManager,
  followDestroyRequests,
  ProxyRegistry,
  sessionLayerResolver,
  sessionSandboxResources,
  sessionSandboxSpec,
  sessionRepositories,
  upstreamTrust,
  withSessionCredentials,
  type Logger,
  type SandboxDriver,
  type SandboxDriverWiring,
  type SandboxRuntime,
} from '@agentfleet/core';
import { createPackageLayerService } from '@agentfleet/core/adapters';
import type { Platform } from './platform.js';

export async function createSandboxRuntime(
  p: Platform,
  log: Logger,
  makeDriver: (wiring: SandboxDriverWiring) => Promise<SandboxDriver>,
): Promise<SandboxRuntime> {
  const cfg = p.config.sandbox;
  const upstream = await upstreamTrust(p.config.egress.caCertsFile);
  const proxies = new ProxyRegistry(
    join(cfg.rootDir, 'px'),
    p,
    log.child({ component: 'outbound-proxy' }),
    upstream,
  );
  const driver = await makeDriver(proxies.driverWiring());
  // Environment `packages`: layers built in confined sandboxes, cached by content.
  const packageLayers = createPackageLayerService({
    rootDir: cfg.rootDir,
    limits: cfg.unsafeNoLimits ? false : { caps: cfg.limitCaps },
    hidePaths: [p.config.dataDir],
    hostUser: cfg.hostUser ? { ...cfg.hostUser, within: [p.config.dataDir, cfg.rootDir] } : null,
    egress: p.egress.policy,
    log: log.child({ component: 'package-layers' }),
    timeoutMs: cfg.packages.buildTimeoutMs,
    maxLayerMb: cfg.packages.maxLayerMb,
    leases: p.coordination.leases,
  });
  const layerFor = sessionLayerResolver(packageLayers, p.events, log);
  const bareManager = createSandboxManager({
    driver,
    objects: p.objects,
    sleepAfterMs: cfg.sleepAfterMs,
    outputQuotas: p.config.outputs,
    resources: sessionSandboxResources(p),
    specFor: sessionSandboxSpec(p, layerFor),
    prepareWorkspace: sessionRepositories(p),
    log: log.child({ component: 'sandbox-manager' }),
    onEvent: (e) => log.debug('sandbox event', { ...e }),
  });
  const manager = withSessionCredentials(p, bareManager, () => proxies.cliRegistry);
  const unsubscribe = await followDestroyRequests(p, manager, log);
  return {
    manager,
    driver,
    web: proxies.webTools(cfg.webSearch),
    setCredentialLookup: (lookup) => proxies.useCredentialLookup(lookup),
    setCliRegistry: (registry) => proxies.useCliRegistry(registry),
    async close() {
      await unsubscribe();
      await manager.close();
      await driver.close();
      await proxies.close();
      await packageLayers.close();
    },
  };
}
