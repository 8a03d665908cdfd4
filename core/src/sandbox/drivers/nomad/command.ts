/**
 * The command a Nomad sandbox task runs: the TCP launcher (sandbox-agent/src/launcher/) in front of
 * the sandbox agent (sandbox-agent/src/agent/), optionally wrapped in bubblewrap exactly as the local driver does (same
 * layout, namespaces, no network but the proxy socket). With `raw_exec`, bubblewrap is what
 * isolates the sandbox; Nomad places it and accounts its resources.
 *
 * Paths are paths ON THE NOMAD CLIENT (node, launcher, agent, bwrap), and `${NOMAD_TASK_DIR}`
 * is interpolated by Nomad in the task's arguments. The read-only system binds are computed
 * here (on the worker) from this machine's layout: the clients are assumed to have the same OS
 * image as the workers. An environment's package layer (sandbox/packages/) is bound read-only
 * from the same path on the client, so it reaches a client that shares the worker's sandbox root
 * (as the Nomad fake's local tasks do: test/e2e/environments/env-packages-nomad.test.ts); with base_image or an
 * unwrapped task, packages are refused with an error.
 *
 * A spec with a base_image runs in that image with Nomad's docker task driver
 * (nomad/src/jobTemplate.ts): the launcher runs the agent unwrapped inside the container (the
 * container is the sandbox; Docker and Nomad enforce memory, CPU and processes), with the node
 * binary, launcher and agent bound read-only from the client at the sandbox's usual paths
 * (`nomadDockerMounts`, passed to the driver's `job.dockerMounts`). Tested in
 * test/e2e/environments/base-image.test.ts.
 */
import { dirname } from 'node:path';
import { SANDBOX_FDS } from '@agentfleet/sandbox-agent';
import type { SandboxSpec } from '../../port.js';
import {
  SANDBOX_PATHS,
  SANDBOX_PROXY_LISTEN,
  SANDBOX_UID,
  sandboxEnv,
  sandboxResources,
  type SandboxLimitCaps,
  type SandboxTrust,
} from '../../shared.js';
import { HOST_CODE_ROOT, sandboxBwrapOptions } from '../bubblewrap/layout.js';
import { withPackageLayerEnv } from '../../packages/layerEnv.js';

export interface NomadAgentCommandOptions {
  /** node on the Nomad client. */
  node: string;
  /** The bundled launcher on the client (sandboxProgram('launcher'), @agentfleet/sandbox-agent). */
  launcher: string;
  /** The bundled agent on the client (sandboxProgram('agent'), @agentfleet/sandbox-agent). */
  agent: string;
  /**
   * The unprivileged user the bwrap sandbox runs as on a client where the launcher is root (the
   * launcher's --host-user), with the directories the launcher may make searchable for it (the
   * task directory always). Default none.
   */
  hostUser?: { uid: number; gid: number; within: string[] } | null;
  /** bwrap on the client; false runs the agent unwrapped (no isolation but the task driver's). Default "bwrap". */
  bwrap?: string | false;
  /** Extra client paths bound read-only at the same path inside the sandbox. */
  readOnlyBinds?: string[];
  /** Client paths inside bound trees to cover (besides this code's own tree). */
  hidePaths?: string[];
  /**
   * Per-sandbox limits the launcher enforces on the client (cgroups, a size-capped disk; see
   * sandbox-agent/src/launcher/), from the spec's instance size lowered by `caps`. Default on; false: none.
   */
  limits?: false | { caps?: SandboxLimitCaps };
  /**
   * The egress CA trust files (core/src/egress/ca.ts writeSandboxTrust), client paths: with a
   * proxy, a bwrap sandbox gets them as the local driver does (system bundle path, CA file,
   * NODE_EXTRA_CA_CERTS, SSL_CERT_FILE, REQUESTS_CA_BUNDLE). Like the scripts, they are
   * written on the worker and the client is assumed to share that path (the fake's local tasks
   * do). Not applied to base_image or unwrapped tasks (no bwrap to bind them).
   */
  trust?: SandboxTrust | null;
}

const TASK_DIR = '${NOMAD_TASK_DIR}';

/** passwd/group/hosts inside the sandbox (as the local driver writes them). */
function systemFiles(): Record<string, string> {
  return {
    passwd: `root:x:0:0:root:/root:/bin/sh\nuser:x:${SANDBOX_UID}:${SANDBOX_UID}:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nuser:x:${SANDBOX_UID}:\nnogroup:x:65534:\n`,
    hosts: '127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n',
  };
}

/** The proxy as seen from inside a network-less sandbox: same credentials, the agent's loopback forwarder. */
function insideProxyUrl(proxyUrl: string): { url: string; target: string } {
  const u = new URL(proxyUrl);
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  const target = `${u.hostname}:${port}`;
  const [host, p] = SANDBOX_PROXY_LISTEN.split(':');
  u.hostname = host;
  u.port = p;
  return { url: u.toString().replace(/\/$/, ''), target };
}

/** Where the launcher is inside a base_image container (node and the agent: SANDBOX_PATHS). */
export const DOCKER_LAUNCHER_PATH = '/opt/agentfleet/launcher.mjs';

/** The client files a base_image container gets, read-only, at the sandbox's usual paths. */
export function nomadDockerMounts(
  o: Pick<NomadAgentCommandOptions, 'node' | 'launcher' | 'agent'>,
): Array<{ source: string; target: string }> {
  return [
    { source: o.node, target: SANDBOX_PATHS.node },
    { source: o.launcher, target: DOCKER_LAUNCHER_PATH },
    { source: o.agent, target: SANDBOX_PATHS.agent },
  ];
}

export function nomadAgentCommand(spec: SandboxSpec, o: NomadAgentCommandOptions): string[] {
  // The package layer is built on the worker against the host image and bound from the same
  // path on the client (sandbox/packages/wiring.ts): only the bwrap task can mount it.
  if (spec.packages && (spec.baseImage || o.bwrap === false))
    throw new Error(
      `environment packages need the bwrap sandbox task on Nomad: they cannot be combined with ${spec.baseImage ? 'base_image' : 'an unwrapped (bwrap: false) task'}`,
    );
  if (spec.readOnlyTrees?.length && (spec.baseImage || o.bwrap === false))
    throw new Error(
      `read_only memory stores need the bwrap sandbox task on Nomad (a read-only bind): they cannot be combined with ${spec.baseImage ? 'base_image' : 'an unwrapped (bwrap: false) task'}`,
    );
  if (spec.baseImage) {
    // inside the container: the launcher gives the agent exactly the sandbox's environment
    const env = sandboxEnv(spec.env, spec.proxyUrl);
    return [
      SANDBOX_PATHS.node,
      DOCKER_LAUNCHER_PATH,
      ...Object.entries(env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
      '--',
      SANDBOX_PATHS.node,
      SANDBOX_PATHS.agent,
    ];
  }
  const bwrap = o.bwrap === undefined ? 'bwrap' : o.bwrap;
  const limits = o.limits === false ? null : sandboxResources(spec.size, o.limits?.caps);
  const limitArgs = limits
    ? [
        '--limits',
        `processes=${limits.processes},memoryMb=${limits.memoryMb},cpus=${limits.cpus},diskMb=${limits.diskMb}`,
      ]
    : [];
  if (bwrap === false) {
    // unwrapped: the launcher gives the agent exactly the sandbox's environment (no disk quota: no sandbox root)
    const env = sandboxEnv(spec.env, spec.proxyUrl);
    return [
      o.node,
      o.launcher,
      ...limitArgs,
      ...Object.entries(env).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
      '--',
      o.node,
      o.agent,
    ];
  }
  const root = `${TASK_DIR}/sandbox`;
  const dirs = {
    workspace: `${root}/workspace`,
    tmp: `${root}/tmp`,
    home: `${root}/home`,
    outputs: `${root}/outputs`,
    memory: `${root}/memory`,
  };
  const systemDir = `${root}/system`;
  const proxySocket = `${root}/proxy.sock`;
  const proxy = spec.proxyUrl ? insideProxyUrl(spec.proxyUrl) : null;
  const launcherArgs: string[] = [];
  if (limits) launcherArgs.push(...limitArgs, '--sandbox-root', root);
  if (o.hostUser) {
    launcherArgs.push('--host-user', `${o.hostUser.uid}:${o.hostUser.gid}`);
    for (const dir of [TASK_DIR, ...o.hostUser.within])
      launcherArgs.push('--host-user-within', dir);
  }
  for (const d of Object.values(dirs)) launcherArgs.push('--mkdir', d);
  for (const [name, content] of Object.entries(systemFiles()))
    launcherArgs.push('--file', `${systemDir}/${name}=${Buffer.from(content).toString('base64')}`);
  if (proxy) launcherArgs.push('--proxy-forward', `${proxySocket}=${proxy.target}`);
  // read-only trees (a read_only memory store): written by the launcher, bound read-only
  const readOnlyTrees = (spec.readOnlyTrees ?? []).map((tree, i) => {
    const source = `${root}/ro/${i}`;
    launcherArgs.push('--mkdir', source);
    for (const f of tree.files)
      launcherArgs.push('--file', `${source}/${f.path}=${Buffer.from(f.data).toString('base64')}`);
    return { source, target: tree.path };
  });
  // The egress CA comes with the proxy: trusted only where that proxy intercepts.
  const trust = proxy ? (o.trust ?? null) : null;
  const baseEnv = sandboxEnv(spec.env, proxy ? proxy.url : null, trust !== null);
  const env = spec.packages ? withPackageLayerEnv(baseEnv) : baseEnv;
  // the same bwrap options as the local driver's, handed to bwrap through a pipe by the launcher
  // the agent's node, readable by nobody (the launcher copies it): the agent runs non-dumpable
  const agentNode = `${TASK_DIR}/agentfleet-node`;
  const bwrapOptions = sandboxBwrapOptions({
    systemDir,
    dirs,
    node: agentNode,
    agent: o.agent,
    proxySocket: proxy ? proxySocket : null,
    readOnlyBinds: o.readOnlyBinds,
    hide: [HOST_CODE_ROOT, dirname(o.launcher), dirname(o.agent), ...(o.hidePaths ?? [])],
    env,
    packages: spec.packages ? { hostDir: spec.packages.hostDir } : null,
    trust,
    readOnlyTrees,
  });
  return [
    o.node,
    o.launcher,
    ...launcherArgs,
    '--exec-only-copy',
    `${o.node}=${agentNode}`,
    '--bwrap-args',
    String(bwrapOptions.length),
    '--',
    bwrap,
    ...bwrapOptions,
    SANDBOX_PATHS.node,
    SANDBOX_PATHS.agent,
    '--channel-fd',
    String(SANDBOX_FDS.channel),
    ...(proxy
      ? ['--proxy-socket', SANDBOX_PATHS.proxySocket, '--proxy-listen', SANDBOX_PROXY_LISTEN]
      : []),
  ];
}
