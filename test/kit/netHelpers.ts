/**
 * Client sockets from a chosen loopback source address (127.0.0.x), one connection per request
 * (no pooling), so per-address limits and X-Forwarded-For handling can be seen from one machine.
 * Used by test/e2e/api/connection-limits.test.ts and test/e2e/auth/auth-limiter.test.ts.
 */
import { request, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';

export interface Answer {
  status: number;
  headers: IncomingMessage['headers'];
  body: any;
}

export interface FromOptions {
  key?: string;
  method?: string;
  headers?: Record<string, string>;
  json?: unknown;
}

function send(localAddress: string, url: string, o: FromOptions) {
  const headers: Record<string, string> = { connection: 'close', ...o.headers };
  if (o.key !== undefined) headers['x-api-key'] = o.key;
  const body = o.json === undefined ? undefined : JSON.stringify(o.json);
  if (body !== undefined) headers['content-type'] = 'application/json';
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(url, { localAddress, method: o.method ?? 'GET', headers, agent: false });
    req.on('response', resolve);
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('timeout')));
    req.end(body);
  });
}

/** One request from `localAddress`; the answer's body parsed as JSON (null when empty). */
export async function requestFrom(
  localAddress: string,
  url: string,
  o: FromOptions = {},
): Promise<Answer> {
  const res = await send(localAddress, url, o);
  let text = '';
  res.setEncoding('utf8');
  for await (const c of res) text += c;
  return { status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : null };
}

/** An open streaming response from `localAddress` (its frames as text so far), or its error answer. */
export interface OpenStream {
  status: number;
  headers: IncomingMessage['headers'];
  /** Everything received so far. */
  text(): string;
  /** Resolves once the received text matches. */
  until(re: RegExp, timeoutMs?: number): Promise<string>;
  close(): void;
}

export async function streamFrom(
  localAddress: string,
  url: string,
  o: FromOptions = {},
): Promise<OpenStream> {
  const res = await send(localAddress, url, {
    ...o,
    headers: { accept: 'text/event-stream', ...o.headers },
  });
  let text = '';
  res.setEncoding('utf8');
  const waiters = new Set<() => void>();
  res.on('data', (c) => {
    text += c;
    for (const w of waiters) w();
  });
  res.on('error', () => {});
  return {
    status: res.statusCode!,
    headers: res.headers,
    text: () => text,
    until: (re, timeoutMs = 10_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!re.test(text)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(text);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`stream: no ${re} in ${JSON.stringify(text.slice(-500))}`));
        }, timeoutMs);
        waiters.add(check);
        check();
      }),
    close: () => res.destroy(),
  };
}

/** A raw TCP connection from `localAddress`, recording what it receives and when it closes. */
export interface RawConnection {
  socket: Socket;
  received(): string;
  /** Resolves with the ms from connect to close. */
  closed: Promise<number>;
  isClosed(): boolean;
}

export function rawFrom(localAddress: string, port: number): Promise<RawConnection> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    let data = '';
    let isClosed = false;
    let t0 = 0;
    socket.setEncoding('utf8');
    socket.on('data', (c) => (data += c));
    socket.on('error', () => {});
    const closed = new Promise<number>((r) =>
      socket.once('close', () => {
        isClosed = true;
        r(Date.now() - t0);
      }),
    );
    socket.once('connect', () => {
      t0 = Date.now();
      resolve({ socket, received: () => data, closed, isClosed: () => isClosed });
    });
    socket.once('error', reject);
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
