/**
 * The bubblewrap filesystem layout and namespace flags, shared by the bubblewrap driver, the
 * Nomad task command (sandbox/drivers/nomad/command.ts: Nomad tasks confine with bwrap too) and the
 * bench: the read-only system binds (an allowlist of /etc, generated passwd/group/
 * hosts), paths hidden inside bound trees, and the bubblewrap start-up check.
 *
 * Tested through the driver contract (core/test/sandbox.contract.ts: hidden host paths, env)
 * and core/test/sandbox.local.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readlinkSync, statSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { SYSTEM_CA_BUNDLES } from '../../../egress/ca.js';
import { SANDBOX_PATHS, SANDBOX_UID, type SandboxTrust } from '../../shared.js';
import { packageLayerBindArgs } from '../../packages/layerEnv.js';
import { SANDBOX_FDS } from '@agentfleet/sandbox-agent';

export { SANDBOX_PATHS, SANDBOX_PROXY_LISTEN, SANDBOX_UID, sandboxEnv } from '../../shared.js';

const ETC_ALLOW = [
  'alternatives',
  'ca-certificates',
  'ca-certificates.conf',
  'ssl/certs',
  'ssl/openssl.cnf',
  'pki/ca-trust',
  'pki/tls/certs',
  'pki/tls/openssl.cnf',
  'crypto-policies',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'timezone',
  'nsswitch.conf',
  'host.conf',
  'gai.conf',
  'protocols',
  'services',
  'networks',
  'mime.types',
  'os-release',
  'debian_version',
  'lsb-release',
  'profile',
  'bash.bashrc',
  'inputrc',
  'terminfo',
  'magic',
  'magic.mime',
  'perl',
  'gitconfig',
  'wgetrc',
  'xattr.conf',
  'manpath.config',
  'locale.alias',
  'locale.gen',
  'default/locale',
];
const ETC_ALLOW_PREFIX = ['python'];
const SYSTEM_DIRS = ['/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

export const BWRAP_MISSING_MESSAGE =
  'the local sandbox driver needs bubblewrap (bwrap), which was not found: install it (Debian/Ubuntu: apt-get install bubblewrap), or configure the Nomad driver';

export interface BwrapCheck {
  ok: boolean;
  version?: string;
  message?: string;
}

/** Whether bwrap is installed and can create the namespaces the driver uses. */
export function checkBubblewrap(bwrapCmd = 'bwrap'): BwrapCheck {
  const bwrap = which(bwrapCmd);
  if (!bwrap) return { ok: false, message: BWRAP_MISSING_MESSAGE };
  // never the server's environment, even for a probe
  const v = spawnSync(bwrap, ['--version'], { encoding: 'utf8', env: {} });
  if (v.error || v.status !== 0) return { ok: false, message: BWRAP_MISSING_MESSAGE };
  const version = v.stdout.trim();
  const r = spawnSync(
    bwrap,
    ['--unshare-all', '--unshare-user', '--die-with-parent', '--ro-bind', '/', '/', '/bin/true'],
    { encoding: 'utf8', timeout: 10_000, env: {} },
  );
  if (r.status !== 0) {
    return {
      ok: false,
      version,
      message: `bubblewrap (${version}) cannot create sandbox namespaces here: ${(r.stderr || r.error?.message || '').trim()} (user namespaces must be allowed: sysctl kernel.unprivileged_userns_clone=1 / user.max_user_namespaces > 0)`,
    };
  }
  return { ok: true, version };
}

export function which(cmd: string): string | null {
  if (cmd.includes('/')) return existsSync(cmd) ? cmd : null;
  for (const d of (process.env.PATH ?? '/usr/bin:/bin').split(delimiter)) {
    const p = join(d || '.', cmd);
    try {
      if (statSync(p).isFile()) return p;
    } catch {
      /* next */
    }
  }
  return null;
}

/** The repository (or installed package tree) this module runs from: never visible in a sandbox. */
export const HOST_CODE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../../../..');

const under = (p: string, root: string) =>
  p === root || p.startsWith(root.endsWith('/') ? root : `${root}/`);

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
  for (const name of ETC_ALLOW)
    if (existsSync(`/etc/${name}`)) args.push('--ro-bind', `/etc/${name}`, `/etc/${name}`);
  try {
    for (const d of readdirSync('/etc').sort()) {
      if (ETC_ALLOW_PREFIX.some((p) => d.startsWith(p)))
        args.push('--ro-bind', `/etc/${d}`, `/etc/${d}`);
    }
  } catch {
    /* none */
  }
  for (const f of ['passwd', 'group', 'hosts'])
    args.push('--ro-bind', join(systemDir, f), `/etc/${f}`);
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
    } catch {
      /* absent: nothing to hide */
    }
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

/** Writes each read-only tree's files under `dir`/<index> (dirs 0755, files 0644): the bind sources. */
export async function writeReadOnlyTrees(
  dir: string,
  trees: ReadonlyArray<{ path: string; files: Array<{ path: string; data: Uint8Array }> }>,
): Promise<Array<{ source: string; target: string }>> {
  const out: Array<{ source: string; target: string }> = [];
  for (const [i, tree] of trees.entries()) {
    const source = join(dir, String(i));
    await fsp.mkdir(source, { recursive: true, mode: 0o755 });
    for (const f of tree.files) {
      const file = join(source, f.path);
      if (!file.startsWith(`${source}/`))
        throw new Error(`read-only file ${f.path} escapes its tree`);
      await fsp.mkdir(dirname(file), { recursive: true, mode: 0o755 });
      await fsp.writeFile(file, f.data, { mode: 0o644 });
    }
    out.push({ source, target: tree.path });
  }
  return out;
}

/** Namespace flags shared by the driver and the bench. */
export const NAMESPACE_ARGS = [
  '--unshare-all',
  '--unshare-user',
  '--disable-userns',
  '--uid',
  String(SANDBOX_UID),
  '--gid',
  String(SANDBOX_UID),
  '--hostname',
  'sandbox',
  '--cap-drop',
  'ALL',
  '--die-with-parent',
  '--new-session',
];

/**
 * The bwrap options of one sandbox, the same for every driver that runs bwrap (the local
 * driver, and the Nomad launcher which gets them through a pipe): the namespaces, the system
 * read-only, the sandbox's own directories, node and the agent read-only, the proxy socket,
 * the egress CA trust files, extra read-only binds with `hide` covered, the seccomp filter (read
 * from SANDBOX_FDS.seccomp: the starter passes seccompProgram() there), the workspace as working
 * directory and an empty environment plus `env`. `node` should be the execute-only copy
 * (agentNode.ts) where the starter can make one.
 */
export function sandboxBwrapOptions(o: {
  systemDir: string;
  dirs: { workspace: string; tmp: string; home: string; outputs: string; memory: string };
  node: string;
  agent: string;
  proxySocket: string | null;
  readOnlyBinds?: string[];
  hide: string[];
  env: Record<string, string>;
  /** The environment's package layer (mounted at /opt/agentfleet/packages; see SandboxSpec). */
  packages?: { hostDir: string; writable?: boolean } | null;
  /** The egress CA trust files (trustBindArgs). */
  trust?: SandboxTrust | null;
  /** Host directories bound read-only over sandbox paths (SandboxSpec.readOnlyTrees). */
  readOnlyTrees?: Array<{ source: string; target: string }>;
}): string[] {
  return [
    ...NAMESPACE_ARGS,
    ...systemBindArgs(o.systemDir),
    ...(['workspace', 'tmp', 'home', 'outputs', 'memory'] as const).flatMap((d) => [
      '--bind',
      o.dirs[d],
      SANDBOX_PATHS[d],
    ]),
    // after the directories they may sit in (a read_only memory store under /mnt/memory)
    ...(o.readOnlyTrees ?? []).flatMap((t) => ['--ro-bind', t.source, t.target]),
    '--ro-bind',
    o.node,
    SANDBOX_PATHS.node,
    '--ro-bind',
    o.agent,
    SANDBOX_PATHS.agent,
    ...(o.proxySocket ? ['--ro-bind', o.proxySocket, SANDBOX_PATHS.proxySocket] : []),
    ...(o.packages ? packageLayerBindArgs(o.packages) : []),
    ...(o.trust ? trustBindArgs(o.trust) : []),
    ...extraBindArgs(o.readOnlyBinds, o.hide),
    // the seccomp program (limits/seccomp.ts) on its descriptor: whoever starts bwrap supplies it
    '--seccomp',
    String(SANDBOX_FDS.seccomp),
    '--chdir',
    SANDBOX_PATHS.workspace,
    '--clearenv',
    ...Object.entries(o.env).flatMap(([k, v]) => ['--setenv', k, v]),
  ];
}

/**
 * The egress CA in the sandbox's trust store (the spec's certificate push, done at start): the
 * CA and the combined bundle read-only at SANDBOX_PATHS.caCert / caBundle, and the bundle over
 * every system bundle path the sandbox sees (bound from the host's /etc), so curl, OpenSSL and
 * anything using the system store trust it without a variable.
 */
export function trustBindArgs(trust: SandboxTrust): string[] {
  const args = [
    '--ro-bind',
    trust.caCert,
    SANDBOX_PATHS.caCert,
    '--ro-bind',
    trust.bundle,
    SANDBOX_PATHS.caBundle,
  ];
  // Regular files only: a symlinked path shows its (covered) target anyway.
  for (const p of SYSTEM_CA_BUNDLES) {
    let regular = false;
    try {
      regular = lstatSync(p).isFile();
    } catch {
      /* absent */
    }
    if (regular) args.push('--ro-bind', trust.bundle, p);
  }
  return args;
}
