/**
 * The bubblewrap sandbox driver's (driver.ts) options and handle types: host directories,
 * node and agent program, bwrap binary, the per-sandbox proxy socket, extra read-only binds
 * and hidden paths, per-sandbox limits, tar mode, start timeout.
 * Tested through core/test/sandbox.local.test.ts and sandbox.limits.test.ts.
 */
import type { SandboxConfinement, SandboxHostUser } from '@agentfleet/sandbox-agent';
import type { Logger } from '../../../log.js';
import type { SandboxDriver, SandboxHandle, SandboxSpec } from '../../port.js';
import type { SandboxLimitCaps, SandboxTrust } from '../../shared.js';
import type { AgentClient } from '../../protocol.js';
import type { SandboxLimitsProbe } from './limits.js';

export interface LocalLimitsOptions {
  /** Upper bounds on every sandbox whatever its size (operator config; tests use small ones). */
  caps?: SandboxLimitCaps;
  /** What this host enforces (from the start-up check); default: probed at the first start. */
  probe?: SandboxLimitsProbe;
}

export interface LocalDriverOptions {
  /** Host directory holding one directory per running sandbox (created, mode 0700). */
  rootDir: string;
  /** Host node binary run inside the sandbox (default: this process's). */
  node?: string;
  /** The agent program (default: sandboxProgram('agent'), the bundle of @agentfleet/sandbox-agent). */
  agentPath?: string;
  /** bwrap binary (default: `bwrap` on PATH). */
  bwrap?: string;
  /**
   * Host unix socket of the outbound proxy, bound into the sandbox; a function may give each
   * sandbox its own socket (the proxy then knows the session from the socket). Keep the socket
   * file in place while sandboxes run: a re-created socket is not seen by running sandboxes.
   */
  proxySocket?:
    | string
    | null
    | ((spec: SandboxSpec) => ProxySocket | string | null | Promise<ProxySocket | string | null>);
  /** Extra host paths bound read-only at the same path (toolchains under /opt, …). */
  readOnlyBinds?: string[];
  /**
   * Host paths that must stay invisible even if they sit inside a bound tree (the data dir, say,
   * under /usr/local/…). The repo/package tree this code runs from and `rootDir` always are.
   */
  hidePaths?: string[];
  /**
   * Per-sandbox limits from the instance size: processes, memory, CPU, disk (default: whatever
   * this host can enforce, the rest logged by name). `false` turns them off (unsafe).
   */
  limits?: false | LocalLimitsOptions;
  /** archive/extract with the `tar` CLI when the sandbox has one ('auto', default) or the agent's built-in ustar code. */
  agentTar?: 'auto' | 'builtin';
  /**
   * The unprivileged host user sandboxes run as (hostUser.ts; the platform passes one when it
   * runs as root). Default none: bwrap runs as this process's user.
   */
  hostUser?: SandboxHostUser | null;
  /** start() fails when the agent has not announced itself by then (default 20 s). */
  startTimeoutMs?: number;
  log?: Logger;
}

/** A per-sandbox proxy socket; `release` runs once the sandbox has exited (e.g. closes that session's proxy). */
export interface ProxySocket {
  path: string;
  release?: () => Promise<void> | void;
  /** The egress CA trust files of that proxy, installed into the sandbox's trust store. */
  trust?: SandboxTrust | null;
}

export interface LocalSandboxHandle extends SandboxHandle {
  readonly api: AgentClient;
  /** The bwrap process (SIGKILL it to simulate a crash). */
  readonly pid: number;
  /** `<rootDir>/<sessionId>` on the host. */
  readonly hostDir: string;
  readonly spec: SandboxSpec;
  /** The sandbox's cgroups, disk and process watchdog (null with limits off). */
  readonly confinement: SandboxConfinement | null;
}

export interface LocalDriver extends SandboxDriver {
  readonly name: 'local';
  start(spec: SandboxSpec): Promise<LocalSandboxHandle>;
}
