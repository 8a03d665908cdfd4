/**
 * The outbound proxies of a worker's sandboxes (egress/proxy/proxy.ts), one per session, with
 * what goes through them: the driver wiring (a unix socket bound into a local sandbox, a TCP
 * endpoint with a per-proxy password for Nomad), the web tools, and the credential lookup the
 * proxies inject by host (the session's vaults unless replaced). Assembled by the sandbox runtime
 * (server/src/sandboxRuntime.ts). Proved by test/e2e/sandbox/sandbox-tools.test.ts (both
 * drivers), test/e2e/credentials/sandbox-credentials*.test.ts and sandbox-ca.test.ts.
 */
import { sessionEgressCredentials, type InstallTokenSource } from '../repositories/egress.js';
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import tls from 'node:tls';
import type { Logger } from '../log.js';
import type { Config } from '../config/config.js';
import type { SecretBox } from '../crypto.js';
import type { Collections } from '../store/collections.js';
import type { DocumentStore } from '../store/port.js';
import type { SandboxSpec, SessionRef } from './port.js';
import { environmentSnapshot } from '../sessions/environmentSnapshot.js';
import {
  createOutboundProxy,
  type CredentialLookup,
  type EgressCredentials,
  type OutboundProxy,
  type ProxyInterception,
} from '../egress/proxy/proxy.js';
import { loadDeploymentCa, writeSandboxTrust } from '../egress/ca.js';
import type { SandboxTrust } from './shared.js';
import { sessionHostPolicy } from '../egress/proxy/policy.js';
import type { EgressPolicy } from '../egress/policy.js';
import { webFetch, webSearch, type WebSearchBackend } from '../tools/web.js';
import type { SessionVaults } from '../egress/injection/vaultInjection.js';
import { CLI_REGISTRY, type CliRegistry } from '../egress/cliRegistry.js';
import type { SandboxDriverWiring, SandboxRuntime } from './runtime.js';

/**
 * What the proxies read of the platform: the egress and sandbox settings, the session's
 * environment snapshot and agent, the store and root secret holding the egress CA, the vaults.
 */
export interface ProxyDeps extends SessionVaults {
  config: Pick<Config, 'egress' | 'sandbox'>;
  /** The deployment's egress policy (the one every tenant-URL request of the platform checks). */
  egress: { policy: EgressPolicy };
  collections: Collections;
  store: DocumentStore;
  secrets: SecretBox;
  /** Tokens for repository resources without their own (the tenant's GitHub installation). */
  integrations?: { repositoryToken: InstallTokenSource };
}

interface EgressCaState {
  intercept: ProxyInterception;
  trust: SandboxTrust;
  webTrust: string[];
}

/**
 * One outbound proxy per session, on a unix socket (or, for sandboxes on Nomad, on TCP with its
 * own Proxy-Authorization), alive while something holds it (released: closed after 30 s).
 */
export class ProxyRegistry {
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
  private readonly egress: EgressPolicy;
  /** Which hosts each cap_cli CLI talks to (setCliRegistry replaces it). */
  cliRegistry: CliRegistry = CLI_REGISTRY;
  /** Who says which request gets which credential: the session's repositories and vaults (setCredentialLookup replaces it). */
  lookup: EgressCredentials;
  private caState: Promise<EgressCaState> | null = null;
  constructor(
    private readonly dir: string,
    private readonly p: ProxyDeps,
    private readonly log: Logger,
    /** What upstream TLS trusts (egress/ca.ts upstreamTrust), read by the caller at start. */
    private readonly upstream: tls.SecureContext,
  ) {
    this.egress = p.egress.policy;
    this.lookup = this.vaultLookup();
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  }

  /**
   * The deployment's egress CA (one per fleet, in the store, key sealed under the root secret),
   * loaded or created on first need, never during start-up: a start that fails before the data
   * dir's generated secrets are stored must not seal a CA with a secret that is then lost. A
   * failed load is retried by the next call.
   */
  egressCa(): Promise<EgressCaState> {
    return (this.caState ??= (async () => {
      const ca = await loadDeploymentCa(this.p.store, this.p.secrets);
      const intercept: ProxyInterception = { ca, upstream: this.upstream };
      const trust = await writeSandboxTrust(join(this.p.config.sandbox.rootDir, 'ca'), ca.certPem);
      // web_fetch goes through the same proxy: Node's roots plus the CA that proxy mints with.
      return { intercept, trust, webTrust: [...tls.rootCertificates, ca.certPem] };
    })().catch((err) => {
      this.caState = null;
      throw err;
    }));
  }

  /** What a driver built on these proxies gets (./runtime.ts SandboxDriverWiring). */
  driverWiring(): SandboxDriverWiring {
    return {
      proxySocket: async (spec: SandboxSpec) => {
        const h = await this.acquire(spec);
        return { path: h.socketPath, release: h.release, trust: h.trust };
      },
      proxyEndpoint: async (spec, at) => {
        const h = await this.acquire(spec, { bind: at.bind });
        const port = new URL(h.address).port;
        const host = at.advertise.includes(':') ? `[${at.advertise}]` : at.advertise;
        return {
          url: `http://sandbox:${h.password}@${host}:${port}`,
          release: h.release,
          trust: h.trust,
        };
      },
    };
  }

  /** web_fetch and web_search through the session's proxy (web_fetch trusting the egress CA). */
  webTools(backend: WebSearchBackend | null): SandboxRuntime['web'] {
    return {
      fetch: async (input, session, policy) => {
        const h = await this.acquire(session);
        try {
          return await webFetch(input as Parameters<typeof webFetch>[0], {
            ...policy,
            proxy: h.address,
            ca: (await this.egressCa()).webTrust,
          });
        } finally {
          h.release();
        }
      },
      search: async (input, session, policy) => {
        const h = await this.acquire(session);
        try {
          return await webSearch(input, { ...policy, backend, proxy: h.address });
        } finally {
          h.release();
        }
      },
    };
  }

  /** SandboxRuntime.setCredentialLookup: null restores the session's vaults. */
  useCredentialLookup(lookup: CredentialLookup | null): void {
    this.lookup = lookup
      ? async (host, ctx) => {
          const c = await lookup(host, ctx);
          return c ? { headers: { [c.header.toLowerCase()]: c.value }, substitutions: [] } : null;
        }
      : this.vaultLookup();
  }

  /** SandboxRuntime.setCliRegistry: null restores CLI_REGISTRY. */
  useCliRegistry(registry: CliRegistry | null): void {
    this.cliRegistry = registry ?? CLI_REGISTRY;
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

  /**
   * The default lookup: the session's repository tokens (repositories/egress.ts), then its vault
   * credentials with the current CLI registry; the session document is read once per request.
   */
  vaultLookup(): EgressCredentials {
    const integrations = this.p.integrations;
    return sessionEgressCredentials(
      {
        ...this.p,
        ...(integrations
          ? { installToken: (t: string, url: string) => integrations.repositoryToken(t, url) }
          : {}),
      },
      () => this.cliRegistry,
    );
  }

  async close(): Promise<void> {
    for (const e of this.proxies.values()) {
      if (e.idle) clearTimeout(e.idle);
      await (await e.proxy).close().catch(() => {});
    }
    this.proxies.clear();
  }
}
