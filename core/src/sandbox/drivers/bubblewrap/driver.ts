/**
 * Bubblewrap sandbox driver (port: core/src/sandbox/port.ts; name 'local'): one bubblewrap sandbox per session, running the sandbox agent
 * (@agentfleet/sandbox-agent) with the host's node binary, speaking the protocol over the bwrap process's stdin/stdout.
 *
 * Per sandbox a fresh host directory `<rootDir>/<sessionId>/{workspace,tmp,home,outputs,memory}`,
 * bound to /workspace, /tmp, /home/user, /mnt/session/outputs and /mnt/memory, and the spec's
 * read-only trees (a read_only memory store) written to `<sessionId>.ro/<n>` and bound read-only
 * at their paths (removed when the sandbox
 * exits: like a container's filesystem, it does not outlive the sandbox; the manager's snapshots
 * do). With the disk limit, that directory is the sandbox's own filesystem, detached from the
 * host once the sandbox runs: its files are then visible only inside the sandbox. Read-only: /usr (and the /bin, /lib… links or dirs), an allowlist of /etc (no shadow,
 * ssh keys, sudoers, machine-id, environment…), generated passwd/group/hosts, the node binary
 * (/opt/agentfleet/bin/node), the agent script (/opt/agentfleet/agent.mjs) and the environment's
 * package layer at /opt/agentfleet/packages (sandbox/packages/; test/e2e/environments/env-packages.test.ts). Nothing else of
 * the host: not the repo, not the data dir, not the other sandboxes' directories (layout.ts).
 *
 * Namespaces: all of them (user, PID, IPC, network, UTS, cgroup); uid/gid 1000 inside; no
 * capabilities; no nested user namespaces; --die-with-parent; --new-session. The network
 * namespace has only loopback: with a proxy socket, the host's unix socket is bound at
 * /run/agentfleet/proxy.sock and the agent forwards 127.0.0.1:3128 to it, so
 * HTTP(S)_PROXY=http://127.0.0.1:3128 reaches the platform's proxy and nothing else is reachable.
 *
 * No host value inside: bwrap (whose forked copy is PID 1 in the sandbox, with bwrap's environ
 * and argv readable there) is started with an EMPTY environment and an argv of sandbox paths
 * only; its options (host paths, the sandbox's env) go through a pipe. The sandbox's processes
 * get exactly sandboxEnv(): PATH, HOME, the spec's env, the proxy variables (and, with a proxy
 * socket that carries `trust`, the egress CA in the trust store and its variables).
 *
 * Limits (instance size, lowered by operator caps; limits.ts, the cgroup and disk code in
 * @agentfleet/sandbox-agent): processes, memory and CPU with one
 * cgroup per controller (v1 or v2) joined before bwrap runs, disk with a size-capped filesystem
 * holding workspace, tmp, home and outputs together. What the host cannot enforce is logged by
 * name at the first start (the worker refuses to start when it can enforce none: runtime.ts).
 *
 * Tested: core/test/sandbox.local.test.ts (driver contract, binds, crash, proxy socket),
 * core/test/sandbox.limits.test.ts (no host secret in /proc, fork bomb, memory hog, disk filler,
 * CPU quota, cleanup), test/e2e/sandbox/sandbox-isolation.test.ts (the same through the SDK),
 * test/e2e/credentials/sandbox-ca.test.ts (the egress CA trusted by curl and pointed at by the variables).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join, resolve } from 'node:path';
import type { Duplex, Writable } from 'node:stream';
import type { SandboxSpec } from '../../port.js';
import { checkSandboxSpec, sandboxResources } from '../../shared.js';
import { baseImageProblem } from '../../../environments/baseImage.js';
import { createAgentClient, nodeStreamTransport } from '../../protocol.js';
import { withPackageLayerEnv } from '../../packages/layerEnv.js';
import {
  CGROUP_PREFIX,
  diskQuotaTools,
  isMountPoint,
  markOwner,
  removeStaleCgroups,
  removeStaleDisks,
  SANDBOX_FDS,
  SandboxConfinement,
  seccompProgram,
  asHostUser,
  checkHostUser,
  prepareBinds,
  SETPRIV,
  sandboxProgram,
  unmountDiskQuota,
  type DiskQuotaTools,
} from '@agentfleet/sandbox-agent';
import {
  describeMissing,
  probeSandboxLimits,
  type SandboxLimitName,
  type SandboxLimitsProbe,
} from './limits.js';
import { agentNodeCopy } from './agentNode.js';
import { clearStaleExposures, sandboxExposure } from './exposedBinds.js';
import {
  BWRAP_MISSING_MESSAGE,
  HOST_CODE_ROOT,
  SANDBOX_PATHS,
  SANDBOX_PROXY_LISTEN,
  sandboxBwrapOptions,
  sandboxEnv,
  which,
  writeReadOnlyTrees,
  writeSystemFiles,
} from './layout.js';

export {
  BWRAP_MISSING_MESSAGE,
  checkBubblewrap,
  extraBindArgs,
  HOST_CODE_ROOT,
  NAMESPACE_ARGS,
  SANDBOX_PATHS,
  SANDBOX_PROXY_LISTEN,
  SANDBOX_UID,
  sandboxBwrapOptions,
  sandboxEnv,
  systemBindArgs,
  writeSystemFiles,
  type BwrapCheck,
} from './layout.js';
import type {
  LocalDriver,
  LocalDriverOptions,
  LocalSandboxHandle,
  ProxySocket,
} from './options.js';

export type {
  LocalDriver,
  LocalDriverOptions,
  LocalLimitsOptions,
  LocalSandboxHandle,
  ProxySocket,
} from './options.js';

/** The environment bwrap itself is started with: nothing of the host's (it shows as PID 1's environ inside). */
const BWRAP_ENV: Record<string, string> = {};

async function removeTree(p: string): Promise<void> {
  try {
    await fsp.rm(p, { recursive: true, force: true, maxRetries: 2 });
  } catch {
    // a sandbox may leave directories without write/search permission
    spawnSync('chmod', ['-R', 'u+rwX', p]);
    await fsp.rm(p, { recursive: true, force: true }).catch(() => {});
  }
}

export function createLocalDriver(opts: LocalDriverOptions): LocalDriver {
  const rootDir = resolve(opts.rootDir);
  const bwrapCmd = opts.bwrap ?? 'bwrap';
  const nodeBin = opts.node ?? process.execPath;
  const systemDir = join(rootDir, '.system');
  const log = opts.log;
  const hostUser = opts.hostUser ?? null;
  /** Directories on the way to bind sources found searchable for hostUser (hostUser.ts). */
  const reachable = new Set<string>();
  const running = new Map<string, LocalSandboxHandle>();
  interface Prepared {
    bwrap: string;
    agent: string;
    /** The execute-only copy of nodeBin the agent runs (agentNode.ts). */
    node: string;
    probe: SandboxLimitsProbe | null;
    enforce: Set<SandboxLimitName>;
    disk: DiskQuotaTools | null;
  }
  let prepared: Promise<Prepared> | null = null;
  let closed = false;

  const prepare = () =>
    (prepared ??= (async () => {
      const bwrap = which(bwrapCmd);
      if (!bwrap) throw new Error(BWRAP_MISSING_MESSAGE);
      await fsp.mkdir(rootDir, { recursive: true, mode: 0o700 });
      await fsp.chmod(rootDir, 0o700);
      await writeSystemFiles(systemDir);
      const agent = opts.agentPath ?? (await sandboxProgram('agent', join(rootDir, '.agent')));
      if (!existsSync(agent)) throw new Error(`sandbox agent script not found: ${agent}`);
      if (!existsSync(nodeBin)) throw new Error(`node binary not found: ${nodeBin}`);
      const node = await agentNodeCopy(nodeBin, join(rootDir, '.node'));
      if (hostUser) {
        if (!existsSync(SETPRIV))
          throw new Error(
            `${SETPRIV} (util-linux) not found: it starts sandboxes as the sandbox host user`,
          );
        const problem = checkHostUser(hostUser, bwrap);
        if (problem) throw new Error(problem);
        await clearStaleExposures(); // what a killed process left mounted
      }
      if (opts.limits === false)
        return {
          bwrap,
          agent,
          node,
          probe: null,
          enforce: new Set<SandboxLimitName>(),
          disk: null,
        };
      const probe = opts.limits?.probe ?? (await probeSandboxLimits(rootDir));
      if (probe.missing.length && !opts.limits?.probe)
        log?.warn(`sandbox limits this host cannot enforce: ${describeMissing(probe)}`, {
          missing: probe.missing.map((m) => m.limit),
        });
      removeStaleCgroups(probe.cgroups, CGROUP_PREFIX);
      const tools = diskQuotaTools();
      const disk = 'tools' in tools ? tools.tools : null;
      if (disk) {
        const stale = await removeStaleDisks(disk, rootDir);
        if (stale.length)
          log?.info('removed the disks of sandboxes whose server died', { count: stale.length });
      }
      return { bwrap, agent, node, probe, enforce: new Set(probe.enforced), disk };
    })().catch((err) => {
      prepared = null;
      throw err;
    }));

  async function start(spec: SandboxSpec): Promise<LocalSandboxHandle> {
    if (closed) throw new Error('local sandbox driver is closed');
    checkSandboxSpec(spec);
    // Only the host image here: another base_image needs the Nomad driver (docker).
    const imageProblem = baseImageProblem({ sandboxDriver: 'local' }, spec.baseImage);
    if (imageProblem) throw new Error(imageProblem);
    const resources = sandboxResources(spec.size, opts.limits ? opts.limits.caps : undefined);
    if (running.has(spec.sessionId))
      throw new Error(`a sandbox for session ${spec.sessionId} is already running`);
    const { bwrap, agent, node, probe, enforce, disk } = await prepare();
    const given =
      typeof opts.proxySocket === 'function'
        ? await opts.proxySocket(spec)
        : (opts.proxySocket ?? null);
    const proxy: ProxySocket | null = typeof given === 'string' ? { path: given } : given;
    const release = async () => {
      try {
        await proxy?.release?.();
      } catch (err) {
        log?.warn('releasing the sandbox proxy socket failed', {
          sessionId: spec.sessionId,
          error: (err as Error).message,
        });
      }
    };
    const proxySocket = proxy?.path ?? null;
    if (proxySocket && !existsSync(proxySocket)) {
      await release();
      throw new Error(`outbound proxy socket ${proxySocket} does not exist`);
    }

    const hostDir = join(rootDir, spec.sessionId);
    const image = `${hostDir}.img`;
    const dirs = {
      workspace: join(hostDir, 'workspace'),
      tmp: join(hostDir, 'tmp'),
      home: join(hostDir, 'home'),
      outputs: join(hostDir, 'outputs'),
      memory: join(hostDir, 'memory'),
    };
    const id = `local-${spec.sessionId}-${randomBytes(4).toString('hex')}`;
    let confinement: SandboxConfinement | null = null;
    // read-only trees (a read_only memory store): host files beside the sandbox's directory,
    // outside its disk, bound read-only
    const treesDir = `${hostDir}.ro`;
    // sources the host user cannot reach, bind-mounted where it can for this start (exposedBinds.ts)
    const exposure = hostUser ? sandboxExposure(`${process.pid}-${id}`) : null;
    /** A start that fails before bwrap runs leaves nothing behind. */
    const abandon = async () => {
      await exposure?.release().catch(() => {});
      await confinement?.release().catch(() => {});
      await removeTree(hostDir);
      await removeTree(treesDir);
      await fsp.rm(`${hostDir}.owner`, { force: true });
      await release();
    };
    try {
      // leftovers of an instance that died with its host process
      if (disk && isMountPoint(hostDir)) await unmountDiskQuota(disk, image, hostDir);
      await removeTree(hostDir);
      await removeTree(treesDir);
      await fsp.mkdir(hostDir, { mode: 0o700 });
      await markOwner(hostDir);
      if (probe) {
        confinement = await SandboxConfinement.create({
          name: id,
          hostDir,
          image,
          resources,
          enforce,
          cgroups: probe.cgroups,
          disk,
          log,
        });
      }
      for (const d of Object.values(dirs)) await fsp.mkdir(d, { recursive: true, mode: 0o755 });
    } catch (err) {
      await abandon();
      throw err;
    }

    const proxyUrl = spec.proxyUrl ?? (proxySocket ? `http://${SANDBOX_PROXY_LISTEN}` : null);
    if (spec.proxyUrl && !proxySocket)
      log?.warn('sandbox has a proxyUrl but no proxy socket: it has no way out', {
        sessionId: spec.sessionId,
      });
    // The egress CA comes with the proxy socket: trusted only where that proxy intercepts.
    const trust = proxySocket ? (proxy?.trust ?? null) : null;
    const base = sandboxEnv(spec.env, proxyUrl, trust !== null);
    const env = spec.packages ? withPackageLayerEnv(base) : base;
    let listen = SANDBOX_PROXY_LISTEN;
    if (proxyUrl) {
      try {
        const u = new URL(proxyUrl);
        if (u.hostname === '127.0.0.1' || u.hostname === 'localhost')
          listen = `127.0.0.1:${u.port || '80'}`;
      } catch {
        /* keep the default */
      }
    }

    let readOnlyTrees: Array<{ source: string; target: string }> = [];
    try {
      readOnlyTrees = await writeReadOnlyTrees(treesDir, spec.readOnlyTrees ?? []);
    } catch (err) {
      await abandon();
      throw err;
    }
    let args = sandboxBwrapOptions({
      systemDir,
      dirs,
      node,
      agent,
      proxySocket: proxySocket ?? null,
      readOnlyBinds: opts.readOnlyBinds,
      hide: [HOST_CODE_ROOT, rootDir, ...(opts.hidePaths ?? [])],
      env,
      packages: spec.packages,
      trust,
      readOnlyTrees,
    });
    const command = [
      SANDBOX_PATHS.node,
      SANDBOX_PATHS.agent,
      '--channel-fd',
      String(SANDBOX_FDS.channel),
      ...(proxySocket
        ? ['--proxy-socket', SANDBOX_PATHS.proxySocket, '--proxy-listen', listen]
        : []),
      ...(opts.agentTar === 'builtin' ? ['--tar', 'builtin'] : []),
    ];

    // Arguments through a pipe (--args): the sandbox's `ps` and /proc/1/cmdline show no host
    // paths or env values (bwrap takes options from the pipe, the command from argv: only
    // sandbox paths there). An empty environment: bwrap's shows as /proc/1/environ inside.
    // Through the confinement's wrapper, bwrap starts inside the sandbox's cgroups. The channel
    // is a socket on SANDBOX_FDS.channel, not bwrap's stdio: bwrap's init (PID 1 inside, as
    // reachable as any command) keeps its stdio but closes the descriptors above 2.
    if (hostUser) {
      try {
        args = await prepareBinds(hostUser, args, proxySocket, reachable, rootDir, (s, w) =>
          exposure!.expose(s, w),
        );
      } catch (err) {
        await abandon();
        throw err;
      }
    }
    // as the sandbox host user (setpriv), after the wrapper joined the cgroups as root
    const bwrapCommand = asHostUser(hostUser, [
      bwrap,
      '--args',
      String(SANDBOX_FDS.args),
      '--',
      ...command,
    ]);
    const [program, ...programArgs] = confinement
      ? confinement.command(bwrapCommand)
      : bwrapCommand;
    const stdio: Array<'ignore' | 'pipe'> = ['ignore', 'ignore', 'pipe'];
    for (const fd of Object.values(SANDBOX_FDS)) stdio[fd] = 'pipe';
    const child: ChildProcess = spawn(program, programArgs, { stdio, env: BWRAP_ENV, cwd: '/' });
    const argPipe = (child.stdio as unknown[])[SANDBOX_FDS.args] as Writable;
    argPipe.on('error', () => {});
    argPipe.end(`${args.join('\0')}\0`);
    const seccompPipe = (child.stdio as unknown[])[SANDBOX_FDS.seccomp] as Writable;
    seccompPipe.on('error', () => {});
    seccompPipe.end(seccompProgram());
    const channel = (child.stdio as unknown[])[SANDBOX_FDS.channel] as Duplex;
    let stderrTail = '';
    child.stderr!.on('data', (c: Buffer) => {
      const s = c.toString('utf8');
      stderrTail = (stderrTail + s).slice(-4000);
      log?.debug('sandbox stderr', { sandboxId: id, text: s.slice(0, 2000) });
    });
    const exited = new Promise<{ code: number | null; signal: string | null }>((res) => {
      child.once('exit', (code, signal) => res({ code, signal }));
      child.once('error', (err) => {
        stderrTail += `\n${err.message}`;
        res({ code: null, signal: null });
      });
    });
    const transport = nodeStreamTransport(channel, channel);
    const rawApi = createAgentClient(transport);
    const api = confinement ? confinement.reportingLimits(rawApi) : rawApi;
    const ready = new Promise<void>((res) =>
      api.onNotification((m) => {
        if (m === 'ready') res();
      }),
    );

    let removed: Promise<void> | null = null;
    const cleanup = () =>
      (removed ??= (async () => {
        await exited;
        if (running.get(spec.sessionId) === handle) running.delete(spec.sessionId);
        try {
          await confinement?.release();
        } catch (err) {
          log?.warn('releasing the sandbox limits failed', {
            sandboxId: id,
            error: (err as Error).message,
          });
        }
        await exposure?.release().catch(() => {});
        await removeTree(hostDir);
        await removeTree(treesDir);
        await fsp.rm(`${hostDir}.owner`, { force: true });
        await release();
      })());

    const terminate = async (graceMs: number) => {
      if (child.exitCode === null && child.signalCode === null) {
        channel.end(); // the agent exits when its channel ends
        const t1 = setTimeout(() => child.kill('SIGTERM'), graceMs);
        const t2 = setTimeout(() => child.kill('SIGKILL'), graceMs + 2000);
        await exited;
        clearTimeout(t1);
        clearTimeout(t2);
      }
      api.close();
      await cleanup();
    };

    const handle: LocalSandboxHandle = {
      id,
      api,
      exited,
      pid: child.pid ?? -1,
      hostDir,
      spec,
      confinement,
      stop: () => terminate(5000),
      destroy: () => terminate(500),
    };
    running.set(spec.sessionId, handle);
    // a channel closed from this side (the agent broke the protocol) stops the sandbox
    transport.onClose(() => void handle.destroy());
    void exited.then(() => {
      api.close();
      void cleanup();
    });

    const startTimeoutMs = opts.startTimeoutMs ?? 20_000;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      ready.then(() => 'ready' as const),
      exited.then(() => 'exited' as const),
      new Promise<'timeout'>((r) => {
        timer = setTimeout(() => r('timeout'), startTimeoutMs);
      }),
    ]);
    clearTimeout(timer);
    // bwrap holds its binds now (or never will): the host-side exposure goes
    await exposure
      ?.release()
      .catch((err) =>
        log?.warn('releasing the sandbox exposure failed', { sandboxId: id, error: String(err) }),
      );
    if (outcome !== 'ready') {
      await handle.destroy();
      const r = await exited;
      const why =
        outcome === 'timeout'
          ? `did not start within ${startTimeoutMs} ms`
          : `exited during start (code ${r.code}, signal ${r.signal})`;
      const hint = /namespace|uid map|setting up uid|Operation not permitted/i.test(stderrTail)
        ? ' (bubblewrap needs unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0; on Ubuntu 24.04+ also kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap)'
        : '';
      throw new Error(
        `sandbox for session ${spec.sessionId} ${why}: ${stderrTail.trim().slice(-1500) || 'no output'}${hint}`,
      );
    }
    if (child.pid) confinement?.watch(child.pid);
    // The sandbox holds binds of its disk now: detach it from the host, so that nothing of it
    // stays mounted if this process is killed (the kernel frees it when the sandbox is gone).
    try {
      await confinement?.detachDisk();
    } catch (err) {
      log?.warn('detaching the sandbox disk failed', {
        sandboxId: id,
        error: (err as Error).message,
      });
    }
    log?.debug('sandbox started', { sandboxId: id, sessionId: spec.sessionId, pid: child.pid });
    return handle;
  }

  return {
    name: 'local',
    start,
    async close() {
      closed = true;
      await Promise.all([...running.values()].map((h) => h.destroy().catch(() => {})));
    },
  };
}
