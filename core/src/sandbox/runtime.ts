/**
 * The worker side of sandboxes: what the sandbox runtime is (SandboxRuntime, assembled by
 * server/src/sandboxRuntime.ts on the driver the composition root chose) and the pieces it is
 * assembled from that read the platform: the files and skills a session's sandbox gets
 * (sessionSandboxResources), its spec from the environment snapshot (sessionSandboxSpec), the
 * credential env of every exec (withSessionCredentials) and the destroy requests of gateways
 * (followDestroyRequests). The proxies are ./proxies.ts. Proven by
 * test/e2e/sandbox/sandbox-tools.test.ts (both drivers).
 */
import type { Logger } from '../log.js';
import type { Collections } from '../store/collections.js';
import type { Coordination } from '../coordination/port.js';
import type { FileService } from '../files/files.js';
import type { SkillService } from '../skills/skills.js';
import {
  SANDBOX_CONTROL_CHANNEL,
  type SandboxSpec,
  type SandboxDriver,
  type SessionRef,
} from './port.js';
import { environmentSnapshot } from '../sessions/environmentSnapshot.js';
import { withMemoryMounts } from '../memory/session/sandboxResources.js';
import { skillResources } from '../sessions/skills.js';
import type { CredentialLookup } from '../egress/proxy/proxy.js';
import type { SandboxTrust } from './shared.js';
import type { SandboxManagerService } from './manager/manager.js';
import type { SandboxManagerDeps } from './manager/types.js';
import type { webFetch, webSearch, WebFetchOptions, WebSearchOptions } from '../tools/web.js';
import type { sessionLayerResolver } from './packages/sessionLayer.js';
import { sessionCredentials, type SessionVaults } from '../egress/injection/vaultInjection.js';
import { managerWithCredentialEnv } from '../egress/injection/commandSecrets.js';
import type { CliRegistry } from '../egress/cliRegistry.js';

/** The web tools' settings from the agent's tool config (webToolConfig.ts validates them). */
export type WebFetchPolicy = Pick<
  WebFetchOptions,
  'allowedDomains' | 'blockedDomains' | 'maxContentTokens'
>;
export type WebSearchPolicy = Pick<
  WebSearchOptions,
  'allowedDomains' | 'blockedDomains' | 'userLocation'
>;

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
 * The files a session's sandbox gets at each warmup: its attached files, the pinned skills'
 * files at /home/user/.skills/{name}/ (sessions/skills.ts) and its memory stores' mounts
 * (memory/session/sandboxResources.ts).
 */
export function sessionSandboxResources(p: {
  collections: Collections;
  files: FileService;
  skills: SkillService;
}): SandboxManagerDeps['resources'] {
  return withMemoryMounts(p, async (s) => {
    const session = await p.collections.sessions.get(s.tenantId, s.sessionId);
    const attached = (
      (session?.resources ?? []) as Array<{ type: string; file_id: string; mount_path: string }>
    ).filter((r) => r.type === 'file');
    const files = await p.files.forSession(s.tenantId, s.sessionId, attached);
    const skills = session?.agent?.pinned_skills ?? [];
    if (!skills.length) return files;
    return [...files, ...(await skillResources(p.skills, s.tenantId, skills))];
  });
}

/**
 * A session's sandbox spec from its environment snapshot (env, base image, the environment's
 * package layer from `layerFor`); an unreadable snapshot is an error, never a default sandbox.
 */
export function sessionSandboxSpec(
  p: { collections: Collections },
  layerFor: ReturnType<typeof sessionLayerResolver>,
): SandboxManagerDeps['specFor'] {
  return async (s) => {
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
  };
}

/**
 * Every exec gets the session's environment_variable placeholders and, for one simple command
 * of a listed program, its command_secret values, read live (egress/injection/commandSecrets.ts).
 */
export function withSessionCredentials<M extends SandboxManagerService>(
  p: SessionVaults,
  manager: M,
  cliRegistry: () => CliRegistry,
): M {
  return managerWithCredentialEnv(
    manager,
    (s) => sessionCredentials(p, s.tenantId, s.sessionId),
    cliRegistry,
  );
}

/**
 * Destroys this worker's sandbox of a session when a gateway asks (SANDBOX_CONTROL_CHANNEL
 * `destroy`, `discard` drops its backup too); cold sessions are left alone. Resolves to the
 * unsubscribe.
 */
export function followDestroyRequests(
  p: { coordination: Pick<Coordination, 'pubsub'> },
  manager: SandboxManagerService,
  log: Logger,
): Promise<() => Promise<void>> {
  return p.coordination.pubsub.subscribe(SANDBOX_CONTROL_CHANNEL, (m: any) => {
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
}
