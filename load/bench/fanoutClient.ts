/**
 * The fan-out section's client, run as its own process (fork of this file, IPC messages): opens
 * `n` SSE connections (raw sockets, `connection: close`) to one URL on 127.0.0.1 and counts, per
 * measurement window, the chunk frames delivered (frames whose data holds `"delta":"<ms>|`) and
 * the latency of each one: the time this process read it minus the stamp in the frame (see
 * fanoutModel.ts; both on this machine's Date.now() clock, ms resolution). The same client
 * measures the platform and the naive baseline.
 *
 * Messages: parent → {cmd:'open', url, headers, n} | {cmd:'start'} | {cmd:'stop'} | {cmd:'close'}
 * | {cmd:'exit'}; child → {opened, failed} after open, {started} after start, {report: ClientReport} after stop,
 * {closedAll} after close (every connection destroyed).
 */
import net from 'node:net';

export interface ClientReport {
  frames: number;
  bytes: number;
  windowMs: number;
  /** Connections the server ended or cut during the window. */
  closed: number;
  latency: { p50: number; p99: number; max: number; samples: number };
}

type Msg =
  | { cmd: 'open'; url: string; headers: Record<string, string>; n: number }
  | { cmd: 'start' }
  | { cmd: 'stop' }
  | { cmd: 'close' }
  | { cmd: 'exit' };

const MARK = '"delta":"';
const MAX_SAMPLES = 4_000_000;
const latencies = new Float64Array(MAX_SAMPLES);
let samples = 0;
let frames = 0;
let bytes = 0;
let closed = 0;
let measuring = false;
let windowStart = 0;
const sockets: net.Socket[] = [];

/**
 * One SSE connection over a raw socket (`connection: close`, no agent). The body is scanned as
 * it arrives, HTTP chunk framing included: both servers write whole frames per chunk, so a
 * chunk-size line never splits a frame, and one socket read may carry many chunks (the client's
 * cost then does not grow with the number of chunks, only with the bytes and frames).
 */
function openOne(url: string, headers: Record<string, string>): Promise<boolean> {
  const u = new URL(url);
  return new Promise((resolve) => {
    const socket = net.connect(Number(u.port), u.hostname);
    sockets.push(socket);
    let head = true;
    let rest = '';
    socket.on('data', (d: Buffer) => {
      let text = d.toString('latin1');
      if (head) {
        const end = (rest + text).indexOf('\r\n\r\n');
        if (end < 0) {
          rest += text;
          return;
        }
        const all = rest + text;
        head = false;
        rest = '';
        if (!all.startsWith('HTTP/1.1 200 ')) {
          socket.destroy();
          resolve(false);
          return;
        }
        resolve(true);
        text = all.slice(end + 4);
      }
      if (!measuring) {
        rest = '';
        return;
      }
      const now = Date.now();
      bytes += d.length;
      const buf = rest + text;
      const end = buf.lastIndexOf('\n\n');
      if (end < 0) {
        rest = buf;
        return;
      }
      rest = buf.slice(end + 2);
      let i = buf.indexOf(MARK);
      while (i >= 0 && i < end) {
        frames++;
        const bar = buf.indexOf('|', i);
        if (bar < 0) break;
        const stamp = Number(buf.slice(i + MARK.length, bar));
        if (samples < MAX_SAMPLES && Number.isFinite(stamp)) latencies[samples++] = now - stamp;
        i = buf.indexOf(MARK, bar);
      }
    });
    socket.on('close', () => {
      if (head) resolve(false);
      else if (measuring) closed++;
    });
    socket.on('error', () => {});
    const lines = [`GET ${u.pathname}${u.search} HTTP/1.1`, `host: ${u.host}`, 'connection: close'];
    for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
    socket.write(lines.join('\r\n') + '\r\n\r\n');
  });
}

function report(): ClientReport {
  const sorted = latencies.subarray(0, samples).sort();
  const at = (p: number) =>
    samples ? sorted[Math.min(samples - 1, Math.floor((p / 100) * samples))]! : NaN;
  return {
    frames,
    bytes,
    windowMs: Date.now() - windowStart,
    closed,
    latency: { p50: at(50), p99: at(99), max: samples ? sorted[samples - 1]! : NaN, samples },
  };
}

process.on('message', (m: Msg) => {
  if (m.cmd === 'open') {
    void (async () => {
      let opened = 0;
      let failed = 0;
      // In batches, so the server's accept queue is not flooded.
      for (let i = 0; i < m.n; i += 100) {
        const batch = Math.min(100, m.n - i);
        const ok = await Promise.all(
          Array.from({ length: batch }, () => openOne(m.url, m.headers)),
        );
        for (const o of ok) o ? opened++ : failed++;
      }
      process.send!({ opened, failed });
    })();
  } else if (m.cmd === 'start') {
    frames = bytes = closed = samples = 0;
    windowStart = Date.now();
    measuring = true;
    process.send!({ started: true });
  } else if (m.cmd === 'stop') {
    measuring = false;
    process.send!({ report: report() });
  } else if (m.cmd === 'close') {
    for (const so of sockets.splice(0)) so.destroy();
    process.send!({ closedAll: true });
  } else if (m.cmd === 'exit') {
    for (const so of sockets) so.destroy();
    process.disconnect();
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
