/**
 * The launcher's command line (see launcher.ts for what each option does), checked: a bad one
 * stops the launcher before anything runs. Proved by core/test/sandbox.nomad.test.ts.
 */
import type { SandboxResources } from '../limits/types.js';

export interface LauncherArgs {
  mkdirs: string[];
  files: Array<{ path: string; content: Buffer }>;
  proxyForward: { socket: string; host: string; port: number } | null;
  limits: SandboxResources | null;
  /** Where the sandbox's disk is mounted (the directory holding its workspace, tmp, home, outputs). */
  sandboxRoot: string | null;
  /** The agent command's whole environment. */
  env: Record<string, string>;
  /** With bwrap: how many arguments after the program go through a pipe (`--args 3`). */
  pipedArgs: number;
  /** Files copied readable by nobody (mode 0111) before the agent starts: the agent's node. */
  execOnlyCopies: Array<{ from: string; to: string }>;
  /** With bwrap, run as root: the unprivileged user the sandbox runs as (limits/hostUser.ts). */
  hostUser: { uid: number; gid: number; within: string[] } | null;
  command: string[];
}

export function parseLauncherArgs(argv: string[]): LauncherArgs {
  const out: LauncherArgs = {
    mkdirs: [],
    files: [],
    proxyForward: null,
    limits: null,
    sandboxRoot: null,
    env: {},
    pipedArgs: 0,
    execOnlyCopies: [],
    hostUser: null,
    command: [],
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      out.command = argv.slice(i + 1);
      break;
    }
    const v = argv[++i];
    if (v === undefined) throw new Error(`${a} needs a value`);
    if (a === '--mkdir') out.mkdirs.push(v);
    else if (a === '--bwrap-args') out.pipedArgs = Number(v);
    else if (a === '--host-user') {
      const [uid, gid] = v.split(':').map(Number);
      if (!Number.isInteger(uid) || !Number.isInteger(gid) || uid! < 1 || gid! < 1)
        throw new Error('--host-user needs UID:GID, both above 0');
      out.hostUser = { uid: uid!, gid: gid!, within: out.hostUser?.within ?? [] };
    } else if (a === '--host-user-within') {
      if (!out.hostUser) throw new Error('--host-user-within goes after --host-user');
      out.hostUser.within.push(v);
    } else if (a === '--exec-only-copy') {
      const eq = v.indexOf('=');
      if (eq <= 0 || eq === v.length - 1) throw new Error('--exec-only-copy needs FROM=TO');
      out.execOnlyCopies.push({ from: v.slice(0, eq), to: v.slice(eq + 1) });
    } else if (a === '--sandbox-root') out.sandboxRoot = v;
    else if (a === '--limits') {
      const l: Record<string, number> = {};
      for (const part of v.split(',')) {
        const [k, n] = part.split('=');
        if (!['processes', 'memoryMb', 'cpus', 'diskMb'].includes(k) || !(Number(n) > 0))
          throw new Error(`--limits: bad entry '${part}'`);
        l[k] = Number(n);
      }
      if (Object.keys(l).length !== 4)
        throw new Error('--limits needs processes, memoryMb, cpus and diskMb');
      out.limits = l as unknown as SandboxResources;
    } else if (a === '--env') {
      const eq = v.indexOf('=');
      if (eq <= 0) throw new Error('--env needs NAME=VALUE');
      out.env[v.slice(0, eq)] = v.slice(eq + 1);
    } else if (a === '--file') {
      const eq = v.indexOf('='); // base64 may end with '='
      out.files.push({ path: v.slice(0, eq), content: Buffer.from(v.slice(eq + 1), 'base64') });
    } else if (a === '--proxy-forward') {
      const eq = v.lastIndexOf('=');
      const target = v.slice(eq + 1);
      const colon = target.lastIndexOf(':');
      out.proxyForward = {
        socket: v.slice(0, eq),
        host: target.slice(0, colon),
        port: Number(target.slice(colon + 1)),
      };
    } else throw new Error(`unknown option ${a}`);
  }
  if (out.command.length === 0) throw new Error('no agent command (after --)');
  if (
    !Number.isInteger(out.pipedArgs) ||
    out.pipedArgs < 0 ||
    out.pipedArgs > out.command.length - 1
  )
    throw new Error("--bwrap-args: not a count of the command's arguments");
  return out;
}
