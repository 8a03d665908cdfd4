/**
 * The sandbox agent program (bundled as dist/agent.mjs): the program that runs INSIDE a sandbox
 * and serves the sandbox protocol (../protocol.ts; host client core/src/sandbox/protocol.ts) on
 * stdin/stdout: JSON-RPC 2.0, one message per line, binary payloads base64.
 *
 * Started as `node agent.mjs [--channel-fd N] [--proxy-socket PATH] [--proxy-listen HOST:PORT]
 * [--tar builtin]`:
 * - serves the protocol on stdin/stdout, or with --channel-fd on that one inherited socket (the
 *   sandbox drivers pass CHANNEL_FD): bwrap's init (PID 1 in the sandbox, as dumpable as any
 *   command) closes every descriptor above 2 it inherits, so only this process holds the
 *   channel, and this process runs non-dumpable (bubblewrap/agentNode.ts), so no command of the
 *   tenant's can reach it through /proc or pidfd_getfd (test/e2e/sandbox/sandbox-isolation.test.ts);
 * - announces itself with a `ready` notification once it serves requests;
 * - with --proxy-socket, forwards every TCP connection to --proxy-listen (default 127.0.0.1:3128)
 *   to that unix socket (proxyBridge.ts);
 * - exits when stdin ends, killing the process groups of the commands it still runs;
 * - `--tar builtin` makes archives use the built-in ustar implementation even when the `tar` CLI
 *   is present (both read each other's archives).
 *
 * Proved by core/test/sandbox.local.test.ts (the driver contract, sandbox.contract.ts, on it).
 */
import { closeSync, readdirSync, readFileSync } from 'node:fs';
import * as net from 'node:net';
import type { Readable, Writable } from 'node:stream';
import { PROTOCOL_VERSION } from '../protocol.js';
import { killGroup, running } from './exec.js';
import { startProxyForwarder } from './proxyBridge.js';
import { createHandlers, serve } from './server.js';
import { tarCli, useBuiltinTar } from './tarCli.js';

export function parseArgs(argv: string[]): {
  channelFd: number | null;
  proxySocket: string | null;
  proxyListen: { host: string; port: number };
} {
  let channelFd: number | null = null;
  let proxySocket: string | null = null;
  let listen = '127.0.0.1:3128';
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--channel-fd') {
      const fd = Number(argv[++i]);
      if (!Number.isInteger(fd) || fd < 3)
        throw new Error('--channel-fd: expected a descriptor above 2');
      channelFd = fd;
    } else if (argv[i] === '--proxy-socket') proxySocket = argv[++i] ?? null;
    else if (argv[i] === '--proxy-listen') listen = argv[++i] ?? listen;
    else if (argv[i] === '--tar' && argv[++i] === 'builtin') useBuiltinTar();
  }
  const idx = listen.lastIndexOf(':');
  return {
    channelFd,
    proxySocket,
    proxyListen: {
      host: listen.slice(0, idx) || '127.0.0.1',
      port: Number(listen.slice(idx + 1)) || 3128,
    },
  };
}

/**
 * Closes the descriptors this process inherited but `keep` (bwrap's options and seccomp pipes,
 * and whatever the host process itself inherited without close-on-exec): the commands the agent
 * starts would inherit them too. Node's own descriptors are all close-on-exec and stay.
 */
export function closeInheritedFds(keep: number[]): void {
  let names: string[];
  try {
    names = readdirSync('/proc/self/fd');
  } catch {
    return; // no /proc: nothing to learn the descriptors from
  }
  for (const name of names) {
    const fd = Number(name);
    if (!(fd > 2) || keep.includes(fd)) continue;
    let flags: number;
    try {
      flags = parseInt(
        /flags:\s*([0-7]+)/.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))![1]!,
        8,
      );
    } catch {
      continue; // gone already (the listing's own descriptor)
    }
    if ((flags & 0o2000000) === 0) {
      try {
        closeSync(fd);
      } catch {
        /* gone */
      }
    }
  }
}

export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  const args = parseArgs(argv);
  closeInheritedFds(args.channelFd === null ? [] : [args.channelFd]);
  let stopping = false;
  const shutdown = (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const child of running) killGroup(child);
    process.exit(code);
  };
  process.on('SIGTERM', () => shutdown(143));
  process.on('SIGINT', () => shutdown(130));
  let input: Readable = process.stdin;
  let output: Writable = process.stdout;
  if (args.channelFd !== null) {
    // the commands the agent starts do not inherit it (test/e2e/sandbox/sandbox-isolation.test.ts)
    const channel = new net.Socket({ fd: args.channelFd, readable: true, writable: true });
    input = output = channel;
  }
  output.on('error', () => shutdown(0)); // EPIPE: the host went away
  if (args.proxySocket) {
    try {
      await startProxyForwarder(args.proxyListen, args.proxySocket);
    } catch (err) {
      process.stderr.write(
        `agent: proxy forwarder on ${args.proxyListen.host}:${args.proxyListen.port} failed: ${(err as Error).message}\n`,
      );
    }
  }
  serve(input, output, createHandlers(), () => shutdown(0));
  output.write(
    `${JSON.stringify({ jsonrpc: '2.0', method: 'ready', params: { protocol: PROTOCOL_VERSION, pid: process.pid, node: process.version, tar: tarCli() ? 'cli' : 'builtin' } })}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`agent: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
