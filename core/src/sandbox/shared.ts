/**
 * What every sandbox driver (./port.ts, ./drivers/) shares, and what the platform outside the
 * drivers relies on: the paths inside every sandbox (one definition of /workspace,
 * /mnt/session/outputs, …), where the outbound proxy listens inside, the sandbox user, the
 * environment every sandbox process starts with (with the egress CA's trust variables when it
 * is mounted), the spec checks (session id, env names, names the platform reserves) and the
 * resources of an instance size under the operator's caps.
 * Tested through the driver contract (core/test/sandbox.contract.ts) run by
 * core/test/sandbox.local.test.ts and sandbox.nomad.test.ts, and core/test/sandbox.limits.test.ts;
 * the trust store in test/e2e/credentials/sandbox-ca.test.ts.
 */
import { dirname } from 'node:path';
import { INSTANCE_SIZES, type InstanceResources } from '@agentfleet/schemas';
import type { SandboxSpec } from './port.js';

export const SANDBOX_PATHS = {
  workspace: '/workspace',
  tmp: '/tmp',
  home: '/home/user',
  outputs: '/mnt/session/outputs',
  /** Mounted memory stores, one directory each (core/src/memory/session/). */
  memory: '/mnt/memory',
  node: '/opt/agentfleet/bin/node',
  agent: '/opt/agentfleet/agent.mjs',
  proxySocket: '/run/agentfleet/proxy.sock',
  /** The deployment's egress CA certificate (core/src/egress/ca.ts), when the proxy intercepts. */
  caCert: '/opt/agentfleet/egress-ca.pem',
  /** The system bundle plus that CA; also bound over the system bundle path. */
  caBundle: '/opt/agentfleet/ca-bundle.pem',
} as const;

/**
 * The sandbox's trust store additions (host paths of core/src/egress/ca.ts writeSandboxTrust):
 * mounted read-only at SANDBOX_PATHS.caCert / caBundle, and the bundle over the system bundle.
 */
export interface SandboxTrust {
  caCert: string;
  bundle: string;
}

/** The variables that point TLS clients at the trust files (Node, OpenSSL, Python requests, git). */
export const SANDBOX_TRUST_ENV: Record<string, string> = {
  NODE_EXTRA_CA_CERTS: SANDBOX_PATHS.caCert,
  SSL_CERT_FILE: SANDBOX_PATHS.caBundle,
  REQUESTS_CA_BUNDLE: SANDBOX_PATHS.caBundle,
  GIT_SSL_CAINFO: SANDBOX_PATHS.caBundle,
};

/** Where HTTP(S)_PROXY points inside the sandbox when a proxy socket is bound. */
export const SANDBOX_PROXY_LISTEN = '127.0.0.1:3128';
export const SANDBOX_UID = 1000;

/**
 * The environment every sandbox process starts with, whatever the driver. With `trust` (the
 * egress CA is mounted), SANDBOX_TRUST_ENV is set over whatever the spec's env says.
 */
export function sandboxEnv(
  specEnv: Record<string, string>,
  proxyUrl: string | null,
  trust = false,
): Record<string, string> {
  return {
    PATH: `/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin:${dirname(SANDBOX_PATHS.node)}`,
    HOME: SANDBOX_PATHS.home,
    USER: 'user',
    LOGNAME: 'user',
    SHELL: '/bin/sh',
    LANG: 'C.UTF-8',
    TMPDIR: '/tmp',
    ...specEnv,
    ...(proxyUrl
      ? {
          HTTP_PROXY: proxyUrl,
          HTTPS_PROXY: proxyUrl,
          http_proxy: proxyUrl,
          https_proxy: proxyUrl,
          NO_PROXY: 'localhost,127.0.0.1,::1',
          no_proxy: 'localhost,127.0.0.1,::1',
        }
      : {}),
    ...(trust ? SANDBOX_TRUST_ENV : {}),
  };
}

/** A session id usable in host paths, job ids and object keys. */
export const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;
/** A valid environment variable name. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** Variables the platform sets itself (proxy, agent, Nomad task), refused in a spec. */
export const RESERVED_ENV =
  /^(AGENTFLEET_.*|NOMAD_.*|HTTP_PROXY|HTTPS_PROXY|http_proxy|https_proxy|NO_PROXY|no_proxy)$/;

/** Throws (naming the field) unless the spec's session id and env names are acceptable. */
export function checkSandboxSpec(spec: SandboxSpec): void {
  if (!SESSION_ID.test(spec.sessionId))
    throw new Error(`sandbox spec: sessionId '${spec.sessionId}' must match ${SESSION_ID}`);
  for (const k of Object.keys(spec.env)) {
    if (!ENV_NAME.test(k))
      throw new Error(`sandbox spec: env name '${k}' is not a valid variable name`);
    if (RESERVED_ENV.test(k))
      throw new Error(`sandbox spec: env ${k} is reserved (set by the platform)`);
  }
  const clean = (p: string) => p.split('/').every((part) => part !== '..' && part !== '.');
  for (const tree of spec.readOnlyTrees ?? []) {
    if (
      !tree.path.startsWith('/') ||
      tree.path === '/' ||
      !clean(tree.path) ||
      tree.path.endsWith('/')
    )
      throw new Error(`sandbox spec: read-only tree path '${tree.path}' must be an absolute path`);
    for (const f of tree.files)
      if (!f.path || f.path.startsWith('/') || !clean(f.path) || f.path.includes('//'))
        throw new Error(`sandbox spec: read-only file '${f.path}' must be a relative path`);
  }
}

/** Upper bounds the operator puts on every sandbox, whatever its size (tests use small ones). */
export interface SandboxLimitCaps {
  processes?: number;
  memoryMb?: number;
  diskMb?: number;
  cpus?: number;
}

/** The resources a sandbox of `size` gets under `caps`. */
export function sandboxResources(size: string, caps: SandboxLimitCaps = {}): InstanceResources {
  const base = (INSTANCE_SIZES as Record<string, InstanceResources>)[size];
  if (!base) throw new Error(`sandbox spec: unknown size '${size}'`);
  const min = (a: number, b: number | undefined) => (b === undefined ? a : Math.min(a, b));
  return {
    cpus: min(base.cpus, caps.cpus),
    memoryMb: min(base.memoryMb, caps.memoryMb),
    diskMb: min(base.diskMb, caps.diskMb),
    processes: min(base.processes, caps.processes),
  };
}
