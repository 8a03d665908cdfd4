import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import type { Logger } from '../log.js';
import type { Platform } from '../platform.js';
import {
  SANDBOX_CONTROL_CHANNEL,
  type SandboxDriver,
  type SandboxSpec,
  type SessionRef,
} from './port.js';
import { environmentSnapshot } from '../sessions/sessions.js';
import { withMemoryMounts } from '../memory/session/sandboxResources.js';
import { skillResources } from '../sessions/skills.js';
import {
  createOutboundProxy,
  type CredentialLookup,
  type EgressCredentials,
  type OutboundProxy,
  type ProxyInterception,
} from '../egress/proxy/proxy.js';
import { loadDeploymentCa, upstreamTrust, writeSandboxTrust } from '../egress/ca.js';
import type { SandboxTrust } from './drivers/shared.js';
import { sessionHostPolicy } from '../egress/proxy/policy.js';
import { createEgressPolicy } from '../egress/policy.js';
import { createSandboxManager, type SandboxManagerService } from './manager/manager.js';
import {
  webFetch,
  webSearch,
  type WebFetchOptions,
  type WebSearchBackend,
  type WebSearchOptions,
} from '../tools/web.js';

/** The web tools' settings from the agent's tool config (webToolConfig.ts validates them). */
export type WebFetchPolicy = Pick<
  WebFetchOptions,
  'allowedDomains' | 'blockedDomains' | 'maxContentTokens'
>;
export type WebSearchPolicy = Pick<
  WebSearchOptions,
  'allowedDomains' | 'blockedDomains' | 'userLocation'
>;
import { createPackageLayerService } from './packages/wiring.js';
import { sessionLayerResolver } from './packages/sessionLayer.js';
import { sessionCredentials, vaultEgressCredentials } from '../egress/injection/vaultInjection.js';
import { managerWithCredentialEnv } from '../egress/injection/commandSecrets.js';
import { CLI_REGISTRY, type CliRegistry } from '../egress/cliRegistry.js';

interface EgressCaState {
  intercept: ProxyInterception;
  trust: SandboxTrust;
  webTrust: string[];
}

/**
 * One outbound proxy per session, on a unix socket (or, for sandboxes on Nomad, on TCP with its
 * own Proxy-Authorization), alive while something holds it.
 */
class ProxyRegistry {
  private readonly proxies = new Map<
    string,
    {
      proxy: Promise<OutboundProxy>;
      socketPath: string;
      /** TCP proxies: the password of their Proxy-Authorization (user `sandbox`). */
      password: string | null;
      refs: number;
      idle: NodeJS.Timeout | null;
    }
  >();
  private readonly egress;
  /** Which hosts each cap_cli CLI talks to (setCliRegistry replaces it). */
  cliRegistry: CliRegistry = CLI_REGISTRY;
  /** Who says which request gets which credential: the session's vaults (setCredentialLookup replaces it). */
  lookup: EgressCredentials;
  constructor(
    private readonly dir: string,
    private readonly p: Platform,
    private readonly log: Logger,
    /** The egress CA, loaded on first need (./runtime.ts createSandboxRuntime). */
    private readonly egressCa: () => Promise<EgressCaState>,
  ) {
    this.egress = createEgressPolicy({ allowPrivateHosts: p.config.egress.allowPrivateHosts });
    this.lookup = this.vaultLookup();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /** The session's proxy; with `tcp`, a separate one listening on `tcp.bind` (any port). */
  async acquire(
    ref: SessionRef,
    tcp?: { bind: string },
  ): Promise<{
    address: string;
    socketPath: string;
    password: string | null;
    release: () => void;
    trust: SandboxTrust;
  }> {
    const key = tcp ? `tcp:${ref.sessionId}` : ref.sessionId;
    let entry = this.proxies.get(key);
    if (!entry) {
      // Unix socket paths are limited to 108 bytes: a short hash names the socket.
      const socketPath = join(
        this.dir,
        `${createHash('sha256').update(ref.sessionId).digest('hex').slice(0, 16)}.sock`,
      );
      const password = tcp ? randomBytes(24).toString('hex') : null;
      const proxy = Promise.all([this.policyFor(ref), this.egressCa()]).then(([policy, ca]) =>
        createOutboundProxy({
          listen: tcp ? { host: tcp.bind, port: 0 } : { socketPath },
          proxyAuthorization: password
            ? `Basic ${Buffer.from(`sandbox:${password}`).toString('base64')}`
            : undefined,
          context: { tenantId: ref.tenantId, sessionId: ref.sessionId },
          policy,
          // Private addresses only where the operator opened them (EGRESS_ALLOW_PRIVATE_HOSTS).
          egress: this.egress,
          // Credentials by host, asked per request (live); HTTPS to such a host is intercepted.
          egressCredentials: (host, ctx) => this.lookup(host, ctx),
          intercept: ca.intercept,
          log: (entry) => this.log.info('outbound request', { ...entry }),
        }),
      );
      entry = { proxy, socketPath, password, refs: 0, idle: null };
      this.proxies.set(key, entry);
    }
    const e = entry;
    const { trust } = await this.egressCa();
    if (e.idle) {
      clearTimeout(e.idle);
      e.idle = null;
    }
    e.refs++;
    const proxy = await e.proxy;
    let released = false;
    return {
      address: proxy.address,
      socketPath: e.socketPath,
      password: e.password,
      trust,
      release: () => {
        if (released) return;
        released = true;
        if (--e.refs > 0) return;
        e.idle = setTimeout(() => {
          if (e.refs > 0) return;
          this.proxies.delete(key);
          void proxy.close();
        }, 30_000);
        e.idle.unref();
      },
    };
  }

  /**
   * The session's environment snapshot and its agent's MCP servers (../egress/proxy/policy.ts
   * sessionHostPolicy); unreadable → no host allowed (fail closed).
   */
  private async policyFor(ref: SessionRef) {
    const env = await environmentSnapshot(this.p.collections, ref.tenantId, ref.sessionId);
    const session = env ? await this.p.collections.sessions.get(ref.tenantId, ref.sessionId) : null;
    return sessionHostPolicy(env?.network ?? null, session?.agent?.mcp_servers as any[]);
  }

  /** The default lookup: the session's vaults, with the current CLI registry. */
  vaultLookup(): EgressCredentials {
    return vaultEgressCredentials(this.p, () => this.cliRegistry);
  }

  async close(): Promise<void> {
    for (const e of this.proxies.values()) {
      if (e.idle) clearTimeout(e.idle);
      await (await e.proxy).close().catch(() => {});
    }
    this.proxies.clear();
  }
}

export interface SandboxRuntime {
  manager: SandboxManagerService;
  driver: SandboxDriver;
  web: {
    fetch(
      input: { url: string },
      session: SessionRef,
      policy?: WebFetchPolicy,
    ): ReturnType<typeof webFetch>;
    search(
      input: { query: string },
      session: SessionRef,
      policy?: WebSearchPolicy,
    ): ReturnType<typeof webSearch>;
  };
  /**
   * Replaces who supplies outbound credentials by host (default and null: the session's vaults,
   * ../egress/injection/vaultInjection.ts). Takes effect on the next request of every session's proxy.
   */
  setCredentialLookup(lookup: CredentialLookup | null): void;
  /**
   * Replaces the hosts each cap_cli CLI's token goes to (default and null: CLI_REGISTRY,
   * core/src/egress/cliRegistry.ts), for the next request of every session's proxy. Not
   * configuration: a seam for tests, whose upstreams live on 127.0.0.1 rather than at a
   * CLI's real host.
   */
  setCliRegistry(registry: CliRegistry | null): void;
  close(): Promise<void>;
}

/**
 * What the runtime gives the driver it is built on: the session's outbound proxy socket, with
 * the egress CA trust files to install into the sandbox.
 */
export interface SandboxDriverWiring {
  proxySocket(
    spec: SandboxSpec,
  ): Promise<{ path: string; release: () => void; trust?: SandboxTrust | null }>;
  /**
   * The session's proxy on TCP, for sandboxes that run on other machines (the Nomad driver's
   * `proxy` option): listening on `bind` (a port of its own), its URL with `advertise` as the
   * host and its Proxy-Authorization credentials (user `sandbox`, a random password per proxy:
   * anyone else reaching the port gets 407), the egress CA trust files, and a release.
   */
  proxyEndpoint(
    spec: SandboxSpec,
    at: { bind: string; advertise: string },
  ): Promise<{ url: string; release: () => void; trust: SandboxTrust | null }>;
}

/**
 * The worker side of sandboxes, on the driver the composition root chose
 * (server/src/sandboxDriver.ts): the lifecycle manager, a proxy per session (a component of
 * every driver, not a deployment choice, so it stays here), the web tools through that proxy,
 * and destroy requests from gateways. Proven by test/e2e/sandbox/sandbox-tools.test.ts (both drivers).
 */
export async function createSandboxRuntime(
  p: Platform,
  log: Logger,
  makeDriver: (wiring: SandboxDriverWiring) => Promise<SandboxDriver>,
): Promise<SandboxRuntime> {
  const cfg = p.config.sandbox;
  // What upstream TLS trusts is read now: an unreadable EGRESS_CA_CERTS stops the worker.
  const upstream = await upstreamTrust(p.config.egress.caCertsFile);
  // The deployment's egress CA (one per fleet, in the store, key sealed under the root secret)
  // is loaded or created on first need, never during start-up: a start that fails before the
  // data dir's generated secrets are stored must not seal a CA with a secret that is then lost.
  let caState: Promise<EgressCaState> | null = null;
  const egressCa = () =>
    (caState ??= (async () => {
      const ca = await loadDeploymentCa(p.store, p.secrets);
      const intercept: ProxyInterception = { ca, upstream };
      const trust = await writeSandboxTrust(join(cfg.rootDir, 'ca'), ca.certPem);
      // web_fetch goes through the same proxy: Node's roots plus the CA that proxy mints with.
      return { intercept, trust, webTrust: [...tls.rootCertificates, ca.certPem] };
    })().catch((err) => {
      caState = null;
      throw err;
    }));
  const proxies = new ProxyRegistry(
    join(cfg.rootDir, 'px'),
    p,
    log.child({ component: 'outbound-proxy' }),
    egressCa,
  );
  const driver = await makeDriver({
    proxySocket: async (spec: SandboxSpec) => {
      const h = await proxies.acquire(spec);
      return { path: h.socketPath, release: h.release, trust: h.trust };
    },
    proxyEndpoint: async (spec, at) => {
      const h = await proxies.acquire(spec, { bind: at.bind });
      const port = new URL(h.address).port;
      const host = at.advertise.includes(':') ? `[${at.advertise}]` : at.advertise;
      return {
        url: `http://sandbox:${h.password}@${host}:${port}`,
        release: h.release,
        trust: h.trust,
      };
    },
  });
  // Environment `packages`: layers built in confined sandboxes, cached by content (./packages/).
  const packageLayers = createPackageLayerService({
    rootDir: cfg.rootDir,
    limits: cfg.unsafeNoLimits ? false : { caps: cfg.limitCaps },
    hidePaths: [p.config.dataDir],
    hostUser: cfg.hostUser ? { ...cfg.hostUser, within: [p.config.dataDir, cfg.rootDir] } : null,
    egress: createEgressPolicy({ allowPrivateHosts: p.config.egress.allowPrivateHosts }),
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
    resources: withMemoryMounts(p, async (s) => {
      const session = await p.collections.sessions.get(s.tenantId, s.sessionId);
      const attached = (
        (session?.resources ?? []) as Array<{ type: string; file_id: string; mount_path: string }>
      ).filter((r) => r.type === 'file');
      const files = await p.files.forSession(s.tenantId, s.sessionId, attached);
      // The pinned skills' files at /home/user/.skills/{name}/ (sessions/skills.ts).
      const skills = session?.agent?.pinned_skills ?? [];
      if (!skills.length) return files;
      return [...files, ...(await skillResources(p.skills, s.tenantId, skills))];
    }),
    specFor: async (s) => {
      const env = await environmentSnapshot(p.collections, s.tenantId, s.sessionId);
      if (!env) throw new Error(`session ${s.sessionId}: its environment snapshot is unreadable`);
      const packages = await layerFor(s, env.packages);
      return {
        ...s,
        size: 'small',
        env: env.env,
        proxyUrl: null,
        packages,
        baseImage: env.base_image,
      };
    },
    log: log.child({ component: 'sandbox-manager' }),
    onEvent: (e) => log.debug('sandbox event', { ...e }),
  });
  // Every exec gets the session's environment_variable placeholders and, for one simple
  // command of a listed program, its command_secret values, read live (../egress/injection/commandSecrets.ts).
  const manager = managerWithCredentialEnv(
    bareManager,
    (s) => sessionCredentials(p, s.tenantId, s.sessionId),
    () => proxies.cliRegistry,
  );
  const unsubscribe = await p.coordination.pubsub.subscribe(SANDBOX_CONTROL_CHANNEL, (m: any) => {
    if (m?.type !== 'destroy' || !m.tenantId || !m.sessionId) return;
    if (manager.state(m.sessionId) === 'cold') return;
    manager
      .destroy(
        { tenantId: m.tenantId, sessionId: m.sessionId, environmentId: m.environmentId },
        { discard: m.discard === true },
      )
      .catch((err) =>
        log.error('sandbox destroy failed', { session_id: m.sessionId, err: String(err) }),
      );
  });
  const backend: WebSearchBackend | null = cfg.webSearch;
  return {
    manager,
    driver,
    web: {
      async fetch(input, session, policy) {
        const h = await proxies.acquire(session);
        try {
          return await webFetch(input as Parameters<typeof webFetch>[0], {
            ...policy,
            proxy: h.address,
            ca: (await egressCa()).webTrust,
          });
        } finally {
          h.release();
        }
      },
      async search(input, session, policy) {
        const h = await proxies.acquire(session);
        try {
          return await webSearch(input, { ...policy, backend, proxy: h.address });
        } finally {
          h.release();
        }
      },
    },
    setCredentialLookup(lookup) {
      proxies.lookup = lookup
        ? async (host, ctx) => {
            const c = await lookup(host, ctx);
            return c ? { headers: { [c.header.toLowerCase()]: c.value }, substitutions: [] } : null;
          }
        : proxies.vaultLookup();
    },
    setCliRegistry(registry) {
      proxies.cliRegistry = registry ?? CLI_REGISTRY;
    },
    async close() {
      await unsubscribe();
      await manager.close();
      await driver.close();
      await proxies.close();
      await packageLayers.close();
    },
  };
}
