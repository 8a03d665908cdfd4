/**
 * The Nomad sandbox task's entry point: serves the sandbox protocol (../protocol.ts: JSON-RPC 2.0,
 * newline-delimited) over TCP, by running the sandbox agent (agent/main.ts, which speaks it on
 * stdin/stdout) as a child and relaying lines between it and the TCP connections.
 *
 *   node launcher.mjs [--mkdir DIR]... [--file PATH=BASE64]... [--proxy-forward SOCKET=HOST:PORT]
 *                       [--env NAME=VALUE]... [--limits processes=N,memoryMb=N,cpus=N,diskMb=N [--sandbox-root DIR]]
 *                       [--bwrap-args N] -- <agent command: node agent.mjs …, or bwrap … node agent.mjs …>
 *
 * Environment: AGENTFLEET_AGENT_LISTEN=host:port (the job passes ${NOMAD_IP_agent}:${NOMAD_PORT_agent});
 * AGENTFLEET_AGENT_TOKEN: when set, a connection's first line must be
 * `{"jsonrpc":"2.0","method":"auth","params":{"token":"…"}}` (anything else closes it).
 * The agent command starts with exactly the `--env` variables (none with bwrap, which sets the
 * sandbox's own with --setenv): NOTHING of this process's environment (the task's, which under
 * raw_exec may include the Nomad client's) reaches the sandbox. Tested in
 * core/test/sandbox.nomad.test.ts ("no host environment in the sandbox").
 *
 * - Several connections may be open at once (e.g. a worker restarted and reconnected): request
 *   ids are rewritten per connection, so each gets only its own answers; notifications (the
 *   agent's `ready`, replayed to every connection once authenticated) go to all.
 * - A dropped connection does not stop the agent; the agent's stdin ends (and so the agent) only
 *   when this process gets SIGTERM/SIGINT (Nomad's kill signal), with SIGKILL after 5 s.
 * - This process exits with the agent's exit status (128 + n when the agent was killed by signal n).
 * - `--bwrap-args N`: the command is bwrap; its first N arguments are its options, handed over
 *   through a pipe (`--args 3`) so that they (host paths, env values) do not show inside. Then,
 *   as the local driver does, the seccomp program (limits/seccomp.ts) goes to bwrap on
 *   SANDBOX_FDS.seccomp and the protocol runs over a socket on SANDBOX_FDS.channel (the agent
 *   command carries `--channel-fd`), never bwrap's stdio, which its init (PID 1 inside) keeps.
 * - `--exec-only-copy FROM=TO`: FROM copied to TO readable by nobody (mode 0111), before the
 *   agent starts: the node binary the agent runs non-dumpable (core's bubblewrap/agentNode.ts).
 * - `--host-user UID:GID [--host-user-within DIR]...`: with bwrap, when this process runs as root,
 *   bwrap runs as that unprivileged user (limits/hostUser.ts: the bind sources made reachable
 *   under the DIRs, the writable ones and the proxy socket given to it), as the local driver
 *   does; not root: ignored (bwrap runs as this process's user).
 * - `--mkdir`/`--file` prepare the task directory before the agent starts (bind sources for
 *   bwrap); `--proxy-forward` serves a unix socket forwarding each connection to HOST:PORT (the
 *   platform's outbound proxy), for a network-less sandbox to bind (agent --proxy-socket).
 *
 * - `--limits`: the same per-sandbox limits as the local driver (limits/confinement.ts), on the
 *   Nomad client, when the launcher may (root: raw_exec runs as the client's user): cgroups for
 *   processes, memory and CPU joined before the agent command runs, and a size-capped filesystem
 *   mounted at `--sandbox-root` (before the --mkdir/--file steps, which then land inside it). What
 *   the client cannot enforce is written to stderr (the task's log) by name; the task still runs.
 *   Tested on the Nomad fake (core/test/sandbox.nomad.test.ts: "limits on the client").
 *
 * Options are parsed by args.ts, limits set up by confine.ts; bundled with them as dist/launcher.mjs.
 */
import { spawn } from 'node:child_process';
import { timingSafeEqual } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import { constants as osConstants } from 'node:os';
import { dirname } from 'node:path';
import { lineSplitter } from '../lineSplitter.js';
import { asHostUser, checkHostUser, prepareBinds } from '../limits/hostUser.js';
import { seccompProgram } from '../limits/seccomp.js';
import { SANDBOX_FDS } from '../protocol.js';
import type { SandboxConfinement } from '../limits/confinement.js';
import { parseLauncherArgs } from './args.js';
import { confine } from './confine.js';

const ID_PREFIX = /^\{"jsonrpc":"2\.0","id":(-?\d+|"(?:[^"\\]|\\.)*"|null),/;

/** The id of a JSON-RPC line and the line with its id replaced (fast path for our own encoders). */
function withId(line: string): { id: unknown; replace: (id: unknown) => string } | null {
  const m = ID_PREFIX.exec(line);
  if (m) {
    const rest = line.slice(m[0].length);
    return {
      id: JSON.parse(m[1]),
      replace: (id) => `{"jsonrpc":"2.0","id":${JSON.stringify(id)},${rest}`,
    };
  }
  try {
    const msg = JSON.parse(line);
    if (!msg || typeof msg !== 'object' || !('id' in msg)) return null;
    return { id: msg.id, replace: (id) => JSON.stringify({ ...msg, id }) };
  } catch {
    return null;
  }
}

const tokenOk = (expected: string, got: unknown) => {
  if (typeof got !== 'string') return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(got);
  return a.length === b.length && timingSafeEqual(a, b);
};

export async function runLauncher(
  argv: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const args = parseLauncherArgs(argv);
  const listen = env.AGENTFLEET_AGENT_LISTEN;
  if (!listen || !/^.+:\d+$/.test(listen))
    throw new Error(`AGENTFLEET_AGENT_LISTEN must be host:port (got ${JSON.stringify(listen)})`);
  const token = env.AGENTFLEET_AGENT_TOKEN || null;
  const confinement = args.limits ? await confine(args.limits, args.sandboxRoot) : null;
  for (const d of args.mkdirs) mkdirSync(d, { recursive: true });
  for (const f of args.files) {
    mkdirSync(dirname(f.path), { recursive: true });
    writeFileSync(f.path, f.content, { mode: 0o644 });
  }
  for (const c of args.execOnlyCopies) {
    mkdirSync(dirname(c.to), { recursive: true });
    copyFileSync(c.from, c.to);
    chmodSync(c.to, 0o111);
  }
  if (args.proxyForward) {
    const { socket, host, port } = args.proxyForward;
    rmSync(socket, { force: true });
    mkdirSync(dirname(socket), { recursive: true });
    const fwd = net.createServer((c) => {
      const up = net.connect(port, host);
      const close = () => {
        c.destroy();
        up.destroy();
      };
      c.on('error', close);
      up.on('error', close);
      c.pipe(up);
      up.pipe(c);
    });
    await new Promise<void>((resolve, reject) =>
      fwd.once('error', reject).listen(socket, () => resolve()),
    );
  }

  // exactly the given variables: never the task's environment (bwrap's shows as PID 1's inside)
  const childEnv = { ...args.env };
  const [named, ...rest] = args.command;
  const program = resolveProgram(named, env.PATH);
  let piped = rest.slice(0, args.pipedArgs);
  const hostUser = piped.length && process.getuid?.() === 0 ? args.hostUser : null;
  if (hostUser) {
    const problem = checkHostUser(hostUser, program);
    if (problem) throw new Error(problem);
    const root = args.sandboxRoot ?? '/nonexistent';
    piped = await prepareBinds(hostUser, piped, args.proxyForward?.socket ?? null, new Set(), root);
  }
  // bwrap reads its options from fd 3: the sandbox's process list shows only the command; as
  // the host user, through setpriv
  const command = asHostUser(
    hostUser,
    piped.length
      ? [program, '--args', String(SANDBOX_FDS.args), '--', ...rest.slice(piped.length)]
      : [program, ...rest],
  );
  const [exe, ...exeArgs] = confinement ? confinement.command(command, childEnv) : command;
  const stdio: Array<'ignore' | 'pipe' | 'inherit'> = piped.length
    ? ['ignore', 'ignore', 'inherit']
    : ['pipe', 'pipe', 'inherit'];
  if (piped.length) for (const fd of Object.values(SANDBOX_FDS)) stdio[fd] = 'pipe';
  const agent = spawn(exe, exeArgs, { env: confinement ? {} : childEnv, cwd: '/', stdio });
  const fds = agent.stdio as unknown as Array<NodeJS.ReadWriteStream | null>;
  if (piped.length) {
    fds[SANDBOX_FDS.args]!.on('error', () => {});
    fds[SANDBOX_FDS.args]!.end(`${piped.join('\0')}\0`);
    fds[SANDBOX_FDS.seccomp]!.on('error', () => {});
    fds[SANDBOX_FDS.seccomp]!.end(seccompProgram());
  }
  const toAgent = (piped.length ? fds[SANDBOX_FDS.channel] : agent.stdin)!;
  const fromAgent = (piped.length ? fds[SANDBOX_FDS.channel] : agent.stdout)!;
  toAgent.on('error', () => {});

  interface Conn {
    socket: net.Socket;
    authed: boolean;
  }
  const conns = new Set<Conn>();
  const inflight = new Map<number, { conn: Conn; id: unknown }>();
  let nextId = 1;
  let readyLine: string | null = null;
  let readySeen = false;
  const send = (conn: Conn, line: string) => {
    if (!conn.socket.destroyed) conn.socket.write(`${line}\n`);
  };

  fromAgent.on(
    'data',
    lineSplitter(
      (line) => {
        const parsed = withId(line);
        if (!parsed) {
          // a notification: `ready` is kept for connections that come later
          if (/"method":"ready"/.test(line)) {
            if (readySeen) return;
            readySeen = true;
            const announce = () => {
              readyLine = line;
              for (const c of conns) if (c.authed) send(c, line);
            };
            if (!confinement || !agent.pid) return announce();
            confinement.watch(agent.pid);
            // The sandbox holds its disk now: detach it on the client before announcing the sandbox,
            // so that nothing of it stays behind even if this process is killed right after.
            void confinement
              .detachDisk()
              .catch((err) =>
                process.stderr.write(
                  `nomad-agent: detaching the sandbox disk failed: ${(err as Error).message}\n`,
                ),
              )
              .then(announce);
            return;
          }
          for (const c of conns) if (c.authed) send(c, line);
          return;
        }
        const route = typeof parsed.id === 'number' ? inflight.get(parsed.id) : undefined;
        if (!route) return; // the asking connection is gone, or an error without id
        inflight.delete(parsed.id as number);
        send(route.conn, parsed.replace(route.id));
      },
      () => process.stderr.write('nomad-agent: agent line over the limit dropped\n'),
    ),
  );

  const server = net.createServer((socket) => {
    const conn: Conn = { socket, authed: token === null };
    conns.add(conn);
    socket.setNoDelay(true);
    if (conn.authed && readyLine) send(conn, readyLine);
    const drop = () => {
      conns.delete(conn);
      for (const [k, r] of inflight) if (r.conn === conn) inflight.delete(k);
    };
    socket.on('close', drop);
    socket.on('error', () => socket.destroy());
    socket.on(
      'data',
      lineSplitter(
        (line) => {
          if (!conn.authed) {
            let ok = false;
            try {
              const m = JSON.parse(line);
              ok = m?.method === 'auth' && tokenOk(token!, m?.params?.token);
            } catch {
              /* not JSON */
            }
            if (!ok) {
              socket.end(
                `${JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'sandbox agent: authentication failed', data: { kind: 'unauthorized' } } })}\n`,
              );
              socket.destroy();
              return;
            }
            conn.authed = true;
            if (readyLine) send(conn, readyLine);
            return;
          }
          const parsed = withId(line);
          if (!parsed || parsed.id === null || parsed.id === undefined) {
            if (!parsed) toAgent.write(`${line}\n`); // notifications pass through
            return;
          }
          const id = nextId++;
          inflight.set(id, { conn, id: parsed.id });
          toAgent.write(`${parsed.replace(id)}\n`);
        },
        () => socket.destroy(),
      ),
    );
  });
  const colon = listen.lastIndexOf(':');
  await new Promise<void>((resolve, reject) =>
    server
      .once('error', reject)
      .listen(Number(listen.slice(colon + 1)), listen.slice(0, colon), () => resolve()),
  );

  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    toAgent.end(); // the agent exits when its channel (or stdin) ends, killing what it still runs
    setTimeout(() => agent.kill('SIGTERM'), 3000).unref();
    setTimeout(() => agent.kill('SIGKILL'), 5000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  agent.once('error', (err) => {
    process.stderr.write(`nomad-agent: cannot start the agent: ${err.message}\n`);
    process.exit(127);
  });
  agent.once('exit', (code, signal) => {
    for (const c of conns) c.socket.destroy();
    server.close();
    const n = signal ? ((osConstants.signals as Record<string, number>)[signal] ?? 0) : 0;
    const status = signal ? 128 + n : (code ?? 1);
    const release = confinement
      ? confinement
          .release()
          .catch((err) =>
            process.stderr.write(
              `nomad-agent: releasing the sandbox limits failed: ${(err as Error).message}\n`,
            ),
          )
      : Promise.resolve();
    void release.then(() => process.exit(status));
  });
}

/** `name` on the launcher's PATH (the agent command gets no PATH of the task's). */
function resolveProgram(name: string, path: string | undefined): string {
  if (name.includes('/')) return name;
  for (const dir of (path || '/usr/local/bin:/usr/bin:/bin').split(':')) {
    if (dir && existsSync(`${dir}/${name}`)) return `${dir}/${name}`;
  }
  return name;
}
