/**
 * The sandbox protocol's transport to a Nomad sandbox: a TCP connection to the task's launcher
 * (sandbox-agent/src/launcher/), authenticated by a first `auth` line with the sandbox's token.
 *
 * With `reconnect`, a connection that drops (network blip, launcher still running) is re-opened
 * for up to `reconnectForMs` (default 30 s) before the transport reports itself closed; lines
 * sent meanwhile are queued and go out on the new connection. Calls in flight when it dropped get
 * no answer (the launcher drops answers for closed connections): they end at their timeout.
 */
import * as net from 'node:net';
import { MAX_LINE_BYTES } from '@agentfleet/sandbox-agent';
import { boundedLineReader, type AgentTransport } from '../../protocol.js';

export interface TcpTransportOptions {
  host: string;
  port: number;
  token: string | null;
  reconnect?: boolean;
  reconnectForMs?: number;
  connectTimeoutMs?: number;
}

function connectOnce(o: TcpTransportOptions): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: o.host, port: o.port });
    const timer = setTimeout(
      () => socket.destroy(new Error(`connect to ${o.host}:${o.port} timed out`)),
      o.connectTimeoutMs ?? 5000,
    );
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.setNoDelay(true);
      socket.setKeepAlive(true, 15_000);
      if (o.token)
        socket.write(
          `${JSON.stringify({ jsonrpc: '2.0', method: 'auth', params: { token: o.token } })}\n`,
        );
      resolve(socket);
    });
    socket.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
}

export async function tcpTransport(o: TcpTransportOptions): Promise<AgentTransport> {
  const lineListeners: Array<(line: string) => void> = [];
  const closeListeners: Array<(reason?: Error) => void> = [];
  let socket: net.Socket | null = await connectOnce(o);
  let closed = false;
  const queue: string[] = [];
  let lineLimit: () => number = () => MAX_LINE_BYTES;

  const fireClose = (reason?: Error) => {
    if (closed) return;
    closed = true;
    socket?.destroy();
    socket = null;
    for (const l of closeListeners) l(reason);
  };

  const attach = (s: net.Socket) => {
    const reader = boundedLineReader({
      onLine: (line) => {
        for (const l of lineListeners) l(line);
      },
      onTooLong: (bytes) =>
        fireClose(new Error(`the agent sent a line over the limit (${bytes} bytes)`)),
      pause: () => s.pause(),
      resume: () => s.resume(),
    });
    reader.limitLines(() => lineLimit());
    s.on('data', (c: Buffer) => reader.push(c));
    s.on('error', () => {}); // 'close' follows
    s.once('close', () => {
      if (closed || socket !== s) return;
      socket = null;
      if (!o.reconnect) return fireClose(new Error('connection closed'));
      void reconnect();
    });
  };

  const reconnect = async () => {
    const until = Date.now() + (o.reconnectForMs ?? 30_000);
    let delay = 100;
    while (!closed && Date.now() < until) {
      try {
        const s = await connectOnce(o);
        if (closed) {
          s.destroy();
          return;
        }
        socket = s;
        attach(s);
        for (const line of queue.splice(0)) s.write(`${line}\n`);
        return;
      } catch {
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(2000, delay * 2);
      }
    }
    fireClose(new Error(`connection to ${o.host}:${o.port} lost`));
  };

  attach(socket);
  return {
    send(line) {
      if (closed) throw new Error('stream closed');
      if (socket) socket.write(`${line}\n`);
      else queue.push(line);
    },
    onLine: (l) => void lineListeners.push(l),
    onClose: (l) => void closeListeners.push(l),
    limitLines: (l) => {
      lineLimit = l;
    },
    close() {
      socket?.end();
      fireClose();
    },
  };
}
