/**
 * The sandbox agent program (bundled as dist/agent.mjs): the program that runs INSIDE a sandbox
 * and serves the sandbox protocol (../protocol.ts; host client core/src/sandbox/protocol.ts) on
 * stdin/stdout: JSON-RPC 2.0, one message per line, binary payloads base64.
 *
 * Started as `node agent.mjs [--proxy-socket PATH] [--proxy-listen HOST:PORT] [--tar builtin]`:
 * - announces itself with a `ready` notification once it serves requests;
 * - with --proxy-socket, forwards every TCP connection to --proxy-listen (default 127.0.0.1:3128)
 *   to that unix socket (proxyBridge.ts);
 * - exits when stdin ends, killing the process groups of the commands it still runs;
 * - `--tar builtin` makes archives use the built-in ustar implementation even when the `tar` CLI
 *   is present (both read each other's archives).
 *
 * Proved by core/test/sandbox.local.test.ts (the driver contract, sandbox.contract.ts, on it).
 */
import { PROTOCOL_VERSION } from '../protocol.js';
import { killGroup, running } from './exec.js';
import { startProxyForwarder } from './proxyBridge.js';
import { createHandlers, serve } from './server.js';
import { tarCli, useBuiltinTar } from './tarCli.js';

export function parseArgs(argv: string[]): {
  proxySocket: string | null;
  proxyListen: { host: string; port: number };
} {
  let proxySocket: string | null = null;
  let listen = '127.0.0.1:3128';
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--proxy-socket') proxySocket = argv[++i] ?? null;
    else if (argv[i] === '--proxy-listen') listen = argv[++i] ?? listen;
    else if (argv[i] === '--tar' && argv[++i] === 'builtin') useBuiltinTar();
  }
  const idx = listen.lastIndexOf(':');
  return {
    proxySocket,
    proxyListen: {
      host: listen.slice(0, idx) || '127.0.0.1',
      port: Number(listen.slice(idx + 1)) || 3128,
    },
  };
}

export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  const args = parseArgs(argv);
  let stopping = false;
  const shutdown = (code: number) => {
    if (stopping) return;
    stopping = true;
    for (const child of running) killGroup(child);
    process.exit(code);
  };
  process.on('SIGTERM', () => shutdown(143));
  process.on('SIGINT', () => shutdown(130));
  process.stdout.on('error', () => shutdown(0)); // EPIPE: the host went away
  if (args.proxySocket) {
    try {
      await startProxyForwarder(args.proxyListen, args.proxySocket);
    } catch (err) {
      process.stderr.write(
        `agent: proxy forwarder on ${args.proxyListen.host}:${args.proxyListen.port} failed: ${(err as Error).message}\n`,
      );
    }
  }
  serve(process.stdin, process.stdout, createHandlers(), () => shutdown(0));
  process.stdout.write(
    `${JSON.stringify({ jsonrpc: '2.0', method: 'ready', params: { protocol: PROTOCOL_VERSION, pid: process.pid, node: process.version, tar: tarCli() ? 'cli' : 'builtin' } })}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`agent: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
