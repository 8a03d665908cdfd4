/**
 * An SSE client over a raw TCP socket that keeps the HTTP/1.1 chunk boundaries of the response:
 * each `res.write` of the server is one chunk, so a test can see how many writes carried its
 * frames (test/e2e/events/sse-fanout.test.ts). 127.0.0.1 only.
 */
import net from 'node:net';

export interface SseFrame {
  event: string;
  data: any;
  id?: string;
}

export interface RawSseStream {
  socket: net.Socket;
  /** The response body's HTTP chunks, in arrival order (utf8). */
  chunks: string[];
  /** Every frame received so far (pings left out). */
  frames(): SseFrame[];
  /** Resolves once the server ended or cut the connection. */
  closed: Promise<void>;
  /** Called after each body chunk is parsed. */
  onChunk: (() => void) | null;
  /** Called on each socket read after the response head (a chunk may still be incomplete). */
  onData: (() => void) | null;
}

export function parseFrames(body: string): SseFrame[] {
  const out: SseFrame[] = [];
  for (const raw of body.split('\n\n')) {
    if (!raw.trim()) continue;
    const f: SseFrame = { event: 'message', data: null };
    for (const line of raw.split('\n')) {
      if (line.startsWith('event: ')) f.event = line.slice(7);
      else if (line.startsWith('data: ')) f.data = JSON.parse(line.slice(6));
      else if (line.startsWith('id: ')) f.id = line.slice(4);
    }
    if (f.event !== 'ping') out.push(f);
  }
  return out;
}

/** GET `path` with these headers; resolves once the 200 response head arrived. */
export function openRawSse(
  url: string,
  path: string,
  headers: Record<string, string>,
): Promise<RawSseStream> {
  const u = new URL(url);
  if (u.hostname !== '127.0.0.1') throw new Error(`not on 127.0.0.1: ${url}`);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(u.port), '127.0.0.1');
    let buf = Buffer.alloc(0);
    let headDone = false;
    let closedResolve!: () => void;
    const stream: RawSseStream = {
      socket,
      chunks: [],
      frames: () => parseFrames(stream.chunks.join('')),
      closed: new Promise<void>((r) => (closedResolve = r)),
      onChunk: null,
      onData: null,
    };
    socket.on('close', () => {
      closedResolve();
      if (!headDone) reject(new Error(`${path}: closed before the response head`));
    });
    socket.on('error', () => {});
    // Bytes not parsed yet: joined only once a whole chunk is there (a multi-MB chunk arrives
    // in many reads).
    let parts: Buffer[] = [];
    let partsLength = 0;
    let need = 0;
    socket.on('data', (d: Buffer) => {
      if (headDone) stream.onData?.();
      parts.push(d);
      partsLength += d.length;
      if (partsLength < need) return;
      buf = Buffer.concat([buf, ...parts]);
      parts = [];
      partsLength = 0;
      need = 0;
      if (!headDone) {
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = buf.subarray(0, end).toString('latin1');
        buf = buf.subarray(end + 4);
        headDone = true;
        if (!/^HTTP\/1\.1 200 /.test(head) || !/transfer-encoding: chunked/i.test(head)) {
          socket.destroy();
          reject(new Error(`${path}: unexpected response head\n${head}`));
          return;
        }
        resolve(stream);
      }
      for (;;) {
        const eol = buf.indexOf('\r\n');
        if (eol < 0) return;
        const size = parseInt(buf.subarray(0, eol).toString('latin1'), 16);
        if (buf.length < eol + 2 + size + 2) {
          need = eol + 2 + size + 2 - buf.length;
          return;
        }
        if (size > 0) stream.chunks.push(buf.subarray(eol + 2, eol + 2 + size).toString('utf8'));
        buf = buf.subarray(eol + 2 + size + 2);
        stream.onChunk?.();
      }
    });
    const lines = [`GET ${path} HTTP/1.1`, `host: ${u.host}`, 'accept: text/event-stream'];
    for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
    socket.write(lines.join('\r\n') + '\r\n\r\n');
  });
}
