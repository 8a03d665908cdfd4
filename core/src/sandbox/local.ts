/**
 * Local sandbox driver: one bubblewrap sandbox per session, running the sandbox agent (agent.ts)
 * with the host's node binary, speaking the protocol over the bwrap process's stdin/stdout.
 *
 * Per sandbox a fresh host directory `<rootDir>/<sessionId>/{workspace,tmp,home,outputs}`,
 * bound to /workspace, /tmp, /home/user and /mnt/session/outputs (removed when the sandbox
 * exits: like a container's filesystem, it does not outlive the sandbox; the manager's snapshots
 * do). Read-only: /usr (and the /bin, /lib… links or dirs), an allowlist of /etc (no shadow,
 * ssh keys, sudoers, machine-id, environment…), generated passwd/group/hosts, the node binary
 * (/opt/agentfleet/bin/node) and the agent script (/opt/agentfleet/agent.mjs). Nothing else of
 * the host: not the repo, not the data dir, not the other sandboxes' directories.
 *
 * Namespaces: all of them (user, PID, IPC, network, UTS, cgroup); uid/gid 1000 inside; no
 * capabilities; no nested user namespaces; --die-with-parent; --new-session; --clearenv then
 * PATH, HOME, the spec's env and the proxy variables. The network namespace has only loopback:
 * with a proxy socket, the host's unix socket is bound at /run/agentfleet/proxy.sock and the
 * agent forwards 127.0.0.1:3128 to it, so HTTP(S)_PROXY=http://127.0.0.1:3128 reaches the
 * platform's proxy and nothing else is reachable.
 *
 * Limits (instance size), enforced per process with prlimit when present: RLIMIT_DATA = memory
 * (heap and anonymous mappings of each process, not a sandbox-wide total), RLIMIT_FSIZE = disk
 * (largest single file). NOT enforced locally: a sandbox-wide memory total, the CPU count and
 * the total disk use (they need cgroups / a quota'd filesystem: the Nomad driver's job).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { delimiter, dirname, join, resolve } from 'node:path';
import type { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../log.js';
import { INSTANCE_SIZES, type SandboxDriver, type SandboxHandle, type SandboxSpec } from '../ports/sandbox.js';
import { createAgentClient, nodeStreamTransport, type AgentClient } from './protocol.js';

export const SANDBOX_PATHS = {
  workspace: '/workspace',
  tmp: '/tmp',
  home: '/home/user',
  outputs: '/mnt/session/outputs',
  node: '/opt/agentfleet/bin/node',
  agent: '/opt/agentfleet/agent.mjs',
  proxySocket: '/run/agentfleet/proxy.sock',
} as const;

/** Where HTTP(S)_PROXY points inside the sandbox when a proxy socket is bound. */
export const SANDBOX_PROXY_LISTEN = '127.0.0.1:3128';
export const SANDBOX_UID = 1000;

/** The environment every sandbox process starts with, whatever the driver. */
export function sandboxEnv(specEnv: Record<string, string>, proxyUrl: string | null): Record<string, string> {
  return {
    PATH: `/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin:${dirname(SANDBOX_PATHS.node)}`,
    HOME: SANDBOX_PATHS.home,
    USER: 'user',
    LOGNAME: 'user',
    SHELL: '/bin/sh',
    LANG: 'C.UTF-8',
    TMPDIR: '/tmp',
    ...specEnv,
    ...(proxyUrl ? { HTTP_PROXY: proxyUrl, HTTPS_PROXY: proxyUrl, http_proxy: proxyUrl, https_proxy: proxyUrl, NO_PROXY: 'localhost,127.0.0.1,::1', no_proxy: 'localhost,127.0.0.1,::1' } : {}),
  };
}

export interface LocalDriverOptions {
  /** Host directory holding one directory per running sandbox (created, mode 0700). */
  rootDir: string;
  /** Host node binary run inside the sandbox (default: this process's). */
  node?: string;
  /** The compiled agent script (default: dist/sandbox/agent.js beside this module; from source, agent.ts transpiled). */
  agentPath?: string;
  /** bwrap binary (default: `bwrap` on PATH). */
  bwrap?: string;
  /**
   * Host unix socket of the outbound proxy, bound into the sandbox; a function may give each
   * sandbox its own socket (the proxy then knows the session from the socket). Keep the socket
   * file in place while sandboxes run: a re-created socket is not seen by running sandboxes.
   */
  proxySocket?: string | null | ((spec: SandboxSpec) => ProxySocket | string | null | Promise<ProxySocket | string | null>);
  /** Extra host paths bound read-only at the same path (toolchains under /opt, …). */
  readOnlyBinds?: string[];
  /**
   * Host paths that must stay invisible even if they sit inside a bound tree (the data dir, say,
   * under /usr/local/…). The repo/package tree this code runs from and `rootDir` always are.
   */
  hidePaths?: string[];
  /** Apply the instance size's per-process limits with prlimit (default true). */
  limits?: boolean;
  /** archive/extract with the `tar` CLI when the sandbox has one ('auto', default) or the agent's built-in ustar code. */
  agentTar?: 'auto' | 'builtin';
  /** start() fails when the agent has not announced itself by then (default 20 s). */
  startTimeoutMs?: number;
  log?: Logger;
}

/** A per-sandbox proxy socket; `release` runs once the sandbox has exited (e.g. closes that session's proxy). */
export interface ProxySocket {
  path: string;
  release?: () => Promise<void> | void;
}

export interface LocalSandboxHandle extends SandboxHandle {
  readonly api: AgentClient;
  /** The bwrap process (SIGKILL it to simulate a crash). */
  readonly pid: number;
  /** `<rootDir>/<sessionId>` on the host. */
  readonly hostDir: string;
  readonly spec: SandboxSpec;
}

export interface LocalDriver extends SandboxDriver {
  readonly name: 'local';
  start(spec: SandboxSpec): Promise<LocalSandboxHandle>;
}

const ETC_ALLOW = [
  'alternatives', 'ca-certificates', 'ca-certificates.conf', 'ssl/certs', 'ssl/openssl.cnf',
  'pki/ca-trust', 'pki/tls/certs', 'pki/tls/openssl.cnf', 'crypto-policies',
  'ld.so.cache', 'ld.so.conf', 'ld.so.conf.d', 'localtime', 'timezone', 'nsswitch.conf', 'host.conf',
  'gai.conf', 'protocols', 'services', 'networks', 'mime.types', 'os-release', 'debian_version',
  'lsb-release', 'profile', 'bash.bashrc', 'inputrc', 'terminfo', 'magic', 'magic.mime', 'perl',
  'gitconfig', 'wgetrc', 'xattr.conf', 'manpath.config', 'locale.alias', 'locale.gen', 'default/locale',
];
const ETC_ALLOW_PREFIX = ['python'];
const SYSTEM_DIRS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
const RESERVED_ENV = /^(AGENTFLEET_.*|HTTP_PROXY|HTTPS_PROXY|http_proxy|https_proxy|NO_PROXY|no_proxy)$/;

export const BWRAP_MISSING_MESSAGE =
  'the local sandbox driver needs bubblewrap (bwrap), which was not found: install it (Debian/Ubuntu: apt-get install bubblewrap), or configure the Nomad driver';

export interface BwrapCheck {
  ok: boolean;
  version?: string;
  message?: string;
}

/** Whether bwrap is installed and can create the namespaces the driver uses. */
export function checkBubblewrap(bwrap = 'bwrap'): BwrapCheck {
  const v = spawnSync(bwrap, ['--version'], { encoding: 'utf8' });
  if (v.error || v.status !== 0) return { ok: false, message: BWRAP_MISSING_MESSAGE };
  const version = v.stdout.trim();
  const r = spawnSync(bwrap, ['--unshare-all', '--unshare-user', '--die-with-parent', '--ro-bind', '/', '/', 'true'], { encoding: 'utf8', timeout: 10_000 });
  if (r.status !== 0) {
    return { ok: false, version, message: `bubblewrap (${version}) cannot create sandbox namespaces here: ${(r.stderr || r.error?.message || '').trim()} (user namespaces must be allowed: sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0)` };
  }
  return { ok: true, version };
}

function which(cmd: string): string | null {
  if (cmd.includes('/')) return existsSync(cmd) ? cmd : null;
  for (const d of (process.env.PATH ?? '/usr/bin:/bin').split(delimiter)) {
    const p = join(d || '.', cmd);
    try {
      if (statSync(p).isFile()) return p;
    } catch { /* next */ }
  }
  return null;
}

/** The compiled agent: beside this module when running from dist, else agent.ts transpiled once into `cacheDir`. */
export async function resolveAgentScript(cacheDir: string): Promise<string> {
  const here = fileURLToPath(import.meta.url);
  if (here.endsWith('.js')) {
    const compiled = join(dirname(here), 'agent.js');
    if (existsSync(compiled)) return compiled;
  }
  const source = here.endsWith('.ts') ? join(dirname(here), 'agent.ts') : resolve(dirname(here), '../../src/sandbox/agent.ts');
  const text = await fsp.readFile(source, 'utf8');
  const out = join(cacheDir, `agent-${createHash('sha256').update(text).digest('hex').slice(0, 16)}.mjs`);
  if (existsSync(out)) return out;
  // typescript is a dev dependency: this path is for running from source (tsx, vitest)
  const ts = (await import('typescript')).default;
  const js = ts.transpileModule(text, { compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 }, fileName: 'agent.ts' }).outputText;
  await fsp.mkdir(cacheDir, { recursive: true });
  const tmp = `${out}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await fsp.writeFile(tmp, js, { mode: 0o644 });
  await fsp.rename(tmp, out);
  return out;
}

/** The repository (or installed package tree) this module runs from: never visible in a sandbox. */
export const HOST_CODE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

const under = (p: string, root: string) => p === root || p.startsWith(root.endsWith('/') ? root : `${root}/`);

/** bwrap arguments binding the system read-only (shared by the driver and the bench). */
export function systemBindArgs(systemDir: string): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const d of SYSTEM_DIRS) {
    let st;
    try {
      st = lstatSync(d);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(d), d);
    else if (st.isDirectory()) args.push('--ro-bind', d, d);
  }
  for (const name of ETC_ALLOW) if (existsSync(`/etc/${name}`)) args.push('--ro-bind', `/etc/${name}`, `/etc/${name}`);
  try {
    for (const d of readdirSync('/etc').sort()) {
      if (ETC_ALLOW_PREFIX.some((p) => d.startsWith(p))) args.push('--ro-bind', `/etc/${d}`, `/etc/${d}`);
    }
  } catch { /* none */ }
  for (const f of ['passwd', 'group', 'hosts']) args.push('--ro-bind', join(systemDir, f), `/etc/${f}`);
  args.push('--proc', '/proc', '--dev', '/dev');
  return args;
}

/**
 * After the sandbox's own binds: extra read-only binds, then paths in `hide` that fall inside a
 * bound tree (e.g. an app under /usr/src) covered with an empty tmpfs (directories) or /dev/null
 * (files).
 */
export function extraBindArgs(extraReadOnly: string[] = [], hide: string[] = []): string[] {
  const args: string[] = [];
  for (const p of extraReadOnly) args.push('--ro-bind', p, p);
  const bound = ['/usr', ...SYSTEM_DIRS, ...ETC_ALLOW.map((e) => `/etc/${e}`), ...extraReadOnly];
  for (const raw of hide) {
    const p = resolve(raw);
    if (!bound.some((b) => under(p, b))) continue;
    try {
      if (statSync(p).isDirectory()) args.push('--tmpfs', p);
      else args.push('--ro-bind', '/dev/null', p);
    } catch { /* absent: nothing to hide */ }
  }
  return args;
}

export async function writeSystemFiles(systemDir: string): Promise<void> {
  await fsp.mkdir(systemDir, { recursive: true });
  const files: Record<string, string> = {
    passwd: `root:x:0:0:root:/root:/bin/sh\nuser:x:${SANDBOX_UID}:${SANDBOX_UID}:user:/home/user:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    group: `root:x:0:\nuser:x:${SANDBOX_UID}:\nnogroup:x:65534:\n`,
    hosts: '127.0.0.1\tlocalhost sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n',
  };
  for (const [name, content] of Object.entries(files)) {
    const p = join(systemDir, name);
    const cur = await fsp.readFile(p, 'utf8').catch(() => null);
    if (cur === content) continue;
    const tmp = `${p}.${randomBytes(4).toString('hex')}.tmp`;
    await fsp.writeFile(tmp, content, { mode: 0o644 });
    await fsp.rename(tmp, p);
  }
}

/** Namespace flags shared by the driver and the bench. */
export const NAMESPACE_ARGS = [
  '--unshare-all', '--unshare-user', '--disable-userns', '--uid', String(SANDBOX_UID), '--gid', String(SANDBOX_UID),
  '--hostname', 'sandbox', '--cap-drop', 'ALL', '--die-with-parent', '--new-session',
];

async function removeTree(p: string): Promise<void> {
  try {
    await fsp.rm(p, { recursive: true, force: true, maxRetries: 2 });
  } catch {
    // a sandbox may leave directories without write/search permission
    spawnSync('chmod', ['-R', 'u+rwX', p]);
    await fsp.rm(p, { recursive: true, force: true }).catch(() => {});
  }
}

const SESSION_ID = /^[A-Za-z0-9_-]{1,128}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function createLocalDriver(opts: LocalDriverOptions): LocalDriver {
  const rootDir = resolve(opts.rootDir);
  const bwrapCmd = opts.bwrap ?? 'bwrap';
  const nodeBin = opts.node ?? process.execPath;
  const systemDir = join(rootDir, '.system');
  const log = opts.log;
  const running = new Map<string, LocalSandboxHandle>();
  let prepared: Promise<{ bwrap: string; agent: string; prlimit: string | null }> | null = null;
  let closed = false;

  const prepare = () =>
    (prepared ??= (async () => {
      const bwrap = which(bwrapCmd);
      if (!bwrap) throw new Error(BWRAP_MISSING_MESSAGE);
      await fsp.mkdir(rootDir, { recursive: true, mode: 0o700 });
      await fsp.chmod(rootDir, 0o700);
      await writeSystemFiles(systemDir);
      const agent = opts.agentPath ?? (await resolveAgentScript(join(rootDir, '.agent')));
      if (!existsSync(agent)) throw new Error(`sandbox agent script not found: ${agent}`);
      if (!existsSync(nodeBin)) throw new Error(`node binary not found: ${nodeBin}`);
      const prlimit = opts.limits === false ? null : which('/usr/bin/prlimit');
      if (opts.limits !== false && !prlimit) log?.warn('prlimit not found: sandbox processes run without memory/file-size limits');
      return { bwrap, agent, prlimit };
    })().catch((err) => {
      prepared = null;
      throw err;
    }));

  async function start(spec: SandboxSpec): Promise<LocalSandboxHandle> {
    if (closed) throw new Error('local sandbox driver is closed');
    if (!SESSION_ID.test(spec.sessionId)) throw new Error(`sandbox spec: sessionId '${spec.sessionId}' must match ${SESSION_ID}`);
    const size = INSTANCE_SIZES[spec.size];
    if (!size) throw new Error(`sandbox spec: unknown size '${spec.size}'`);
    for (const k of Object.keys(spec.env)) {
      if (!ENV_NAME.test(k)) throw new Error(`sandbox spec: env name '${k}' is not a valid variable name`);
      if (RESERVED_ENV.test(k)) throw new Error(`sandbox spec: env ${k} is reserved (set by the platform)`);
    }
    if (running.has(spec.sessionId)) throw new Error(`a sandbox for session ${spec.sessionId} is already running`);
    const { bwrap, agent, prlimit } = await prepare();
    const given = typeof opts.proxySocket === 'function' ? await opts.proxySocket(spec) : (opts.proxySocket ?? null);
    const proxy: ProxySocket | null = typeof given === 'string' ? { path: given } : given;
    const release = async () => {
      try {
        await proxy?.release?.();
      } catch (err) {
        log?.warn('releasing the sandbox proxy socket failed', { sessionId: spec.sessionId, error: (err as Error).message });
      }
    };
    const proxySocket = proxy?.path ?? null;
    if (proxySocket && !existsSync(proxySocket)) {
      await release();
      throw new Error(`outbound proxy socket ${proxySocket} does not exist`);
    }

    const hostDir = join(rootDir, spec.sessionId);
    const dirs = { workspace: join(hostDir, 'workspace'), tmp: join(hostDir, 'tmp'), home: join(hostDir, 'home'), outputs: join(hostDir, 'outputs') };
    try {
      await removeTree(hostDir); // leftovers of an instance that died with its host process
      for (const d of Object.values(dirs)) await fsp.mkdir(d, { recursive: true, mode: 0o755 });
    } catch (err) {
      await release();
      throw err;
    }

    const proxyUrl = spec.proxyUrl ?? (proxySocket ? `http://${SANDBOX_PROXY_LISTEN}` : null);
    if (spec.proxyUrl && !proxySocket) log?.warn('sandbox has a proxyUrl but no proxy socket: it has no way out', { sessionId: spec.sessionId });
    const env = sandboxEnv(spec.env, proxyUrl);
    let listen = SANDBOX_PROXY_LISTEN;
    if (proxyUrl) {
      try {
        const u = new URL(proxyUrl);
        if (u.hostname === '127.0.0.1' || u.hostname === 'localhost') listen = `127.0.0.1:${u.port || '80'}`;
      } catch { /* keep the default */ }
    }

    const args = [
      ...NAMESPACE_ARGS,
      ...systemBindArgs(systemDir),
      '--bind', dirs.workspace, SANDBOX_PATHS.workspace,
      '--bind', dirs.tmp, SANDBOX_PATHS.tmp,
      '--bind', dirs.home, SANDBOX_PATHS.home,
      '--bind', dirs.outputs, SANDBOX_PATHS.outputs,
      '--ro-bind', nodeBin, SANDBOX_PATHS.node,
      '--ro-bind', agent, SANDBOX_PATHS.agent,
      ...(proxySocket ? ['--ro-bind', proxySocket, SANDBOX_PATHS.proxySocket] : []),
      ...extraBindArgs(opts.readOnlyBinds, [HOST_CODE_ROOT, rootDir, ...(opts.hidePaths ?? [])]),
      '--chdir', SANDBOX_PATHS.workspace,
      '--clearenv',
      ...Object.entries(env).flatMap(([k, v]) => ['--setenv', k, v]),
    ];
    const command = [
      ...(prlimit ? [prlimit, `--data=${size.memoryMb * 1024 * 1024}`, `--fsize=${size.diskMb * 1024 * 1024}`, '--'] : []),
      SANDBOX_PATHS.node, SANDBOX_PATHS.agent,
      ...(proxySocket ? ['--proxy-socket', SANDBOX_PATHS.proxySocket, '--proxy-listen', listen] : []),
      ...(opts.agentTar === 'builtin' ? ['--tar', 'builtin'] : []),
    ];

    // arguments through a pipe (--args): the sandbox's `ps` shows no host paths or env values
    // (bwrap takes options from the pipe, the command from argv: only sandbox paths there)
    const child: ChildProcess = spawn(bwrap, ['--args', '3', '--', ...command], { stdio: ['pipe', 'pipe', 'pipe', 'pipe'] });
    const argPipe = child.stdio[3] as Writable;
    argPipe.on('error', () => {});
    argPipe.end(`${args.join('\0')}\0`);
    const id = `local-${spec.sessionId}-${randomBytes(4).toString('hex')}`;
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
    const api = createAgentClient(nodeStreamTransport(child.stdout!, child.stdin!));
    const ready = new Promise<void>((res) => api.onNotification((m) => { if (m === 'ready') res(); }));

    let removed: Promise<void> | null = null;
    const cleanup = () => (removed ??= (async () => {
      await exited;
      if (running.get(spec.sessionId) === handle) running.delete(spec.sessionId);
      await removeTree(hostDir);
      await release();
    })());

    const terminate = async (graceMs: number) => {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin!.end(); // the agent exits when its stdin ends
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
      stop: () => terminate(5000),
      destroy: () => terminate(500),
    };
    running.set(spec.sessionId, handle);
    void exited.then(() => { api.close(); void cleanup(); });

    const startTimeoutMs = opts.startTimeoutMs ?? 20_000;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      ready.then(() => 'ready' as const),
      exited.then(() => 'exited' as const),
      new Promise<'timeout'>((r) => { timer = setTimeout(() => r('timeout'), startTimeoutMs); }),
    ]);
    clearTimeout(timer);
    if (outcome !== 'ready') {
      await handle.destroy();
      const r = await exited;
      const why = outcome === 'timeout' ? `did not start within ${startTimeoutMs} ms` : `exited during start (code ${r.code}, signal ${r.signal})`;
      const hint = /namespace|uid map|setting up uid|Operation not permitted/i.test(stderrTail)
        ? ' (bubblewrap needs unprivileged user namespaces: sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0; on Ubuntu 24.04+ also kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap)'
        : '';
      throw new Error(`sandbox for session ${spec.sessionId} ${why}: ${stderrTail.trim().slice(-1500) || 'no output'}${hint}`);
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
