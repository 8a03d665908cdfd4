/**
 * Long-lived processes inside the sandbox (stdio MCP servers): a child whose stdin/stdout are a
 * stream of the agent, read and written with the stream methods of streams.ts.
 *
 *   procOpen     { command, args?, env?, cwd? }   → { stream, pid }
 *   streamRead   { stream, waitMs? }              → { base64, eof, exit? }   (process streams)
 *   streamWrite  { stream, base64 }               → null   (to the process's stdin)
 *   streamEnd    { stream }                       → null   (closes its stdin)
 *   streamClose  { stream }                       → null   (kills its process group)
 *   procWaitPort { stream, port, timeoutMs }      → null   (127.0.0.1:port accepts)
 *
 * Guarantees:
 * - the command is spawned directly (no shell; found on the sandbox's PATH) in its own process
 *   group, cwd /workspace by default, with the agent's environment (the sandbox's: proxy and CA
 *   variables) plus `env`; procOpen answers only once the process started: a missing executable
 *   is a `not_found` error naming the command, never a hang;
 * - streamRead waits for output (no polling): it answers as soon as stdout has bytes (at most
 *   STREAM_CHUNK_BYTES), or empty after `waitMs` (default and cap PROC_READ_WAIT_MS); at the end
 *   of stdout it answers `eof` with `exit: { code, signal, stderr }` (stderr: the last 8 KiB);
 * - stdout is held in a bounded buffer: over STREAM_CHUNK_BYTES unread, the child's stdout is
 *   paused (the child blocks on write) until the host reads;
 * - at most MAX_PROCESSES are open; each is killed (whole process group) on streamClose, when
 *   the agent exits (its connection ended: main.ts kills `running`), or when no call touched it
 *   for PROC_IDLE_MS (a host that went away without closing, e.g. a dropped Nomad connection).
 * Proved by core/test/sandbox-mcp-stdio.test.ts (real bwrap sandbox) and
 * core/test/sandbox-mcp-stdio-nomad.test.ts (behind the Nomad launcher).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as net from 'node:net';
import {
  AgentError,
  DEFAULT_CWD,
  MAX_PROCESSES,
  PROC_READ_WAIT_MS,
  STREAM_CHUNK_BYTES,
} from '../protocol.js';
import { killGroup, running } from './exec.js';
import { absPath, envParam, num, str, type Params } from './params.js';

/** A process stream untouched this long (no call pending or made) is killed. */
export const PROC_IDLE_MS = 2 * 60_000;
const STDERR_TAIL_BYTES = 8 * 1024;
const MAX_ARGS = 1000;

interface ProcStream {
  id: string;
  command: string;
  child: ChildProcess;
  chunks: Buffer[];
  size: number;
  ended: boolean;
  stderrTail: string;
  exit: Promise<{ code: number | null; signal: string | null }>;
  wakers: Set<() => void>;
  pendingCalls: number;
  timer: NodeJS.Timeout | null;
}

const procs = new Map<string, ProcStream>();
let seq = 0;

export const isProcStream = (p: Params): boolean =>
  typeof p.stream === 'string' && procs.has(p.stream);

function touch(s: ProcStream): void {
  if (s.timer) clearTimeout(s.timer);
  s.timer = null;
  if (s.pendingCalls > 0) return;
  s.timer = setTimeout(() => closeProc(s), PROC_IDLE_MS);
  s.timer.unref?.();
}

function closeProc(s: ProcStream): void {
  if (s.timer) clearTimeout(s.timer);
  procs.delete(s.id);
  running.delete(s.child);
  killGroup(s.child);
  s.child.stdout?.destroy();
  s.child.stdin?.destroy();
  s.ended = true;
  for (const w of s.wakers) w();
}

function procOf(p: Params, method: string): ProcStream {
  const id = str(p, 'stream', method);
  const s = procs.get(id);
  if (!s)
    throw new AgentError('not_found', `${method}: no open process stream '${id}'`, {
      argument: 'stream',
    });
  return s;
}

/** Runs `fn` as one call on the stream: the idle timer does not run while a call is pending. */
async function during<T>(s: ProcStream, fn: () => Promise<T>): Promise<T> {
  s.pendingCalls++;
  touch(s);
  try {
    return await fn();
  } finally {
    s.pendingCalls--;
    if (procs.has(s.id)) touch(s);
  }
}

function argsParam(p: Params): string[] {
  const v = p.args;
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.length > MAX_ARGS || v.some((a) => typeof a !== 'string'))
    throw new AgentError(
      'invalid_params',
      `procOpen: 'args' must be an array of at most ${MAX_ARGS} strings`,
      { argument: 'args' },
    );
  if (v.some((a: string) => a.includes('\0')))
    throw new AgentError('invalid_params', "procOpen: 'args' contains a NUL byte", {
      argument: 'args',
    });
  return v as string[];
}

export async function procOpenOp(p: Params) {
  const command = str(p, 'command', 'procOpen');
  if (!command || command.includes('\0'))
    throw new AgentError('invalid_params', "procOpen: 'command' must be a non-empty string", {
      argument: 'command',
    });
  const args = argsParam(p);
  const env = envParam(p, 'env', 'procOpen');
  const cwd = absPath(p, 'cwd', 'procOpen', DEFAULT_CWD);
  if (procs.size >= MAX_PROCESSES)
    throw new AgentError('too_large', `procOpen: ${MAX_PROCESSES} processes are open already`, {
      argument: 'command',
    });
  const child = spawn(command, args, {
    cwd,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (err: NodeJS.ErrnoException) => {
      const kind =
        err.code === 'ENOENT' ? 'not_found' : err.code === 'EACCES' ? 'permission_denied' : 'io';
      const why = err.code === 'ENOENT' ? 'no such executable' : (err.code ?? err.message);
      reject(
        new AgentError(kind, `procOpen: ${command}: ${why} (cwd ${cwd})`, {
          argument: 'command',
          ...(err.code ? { errno: err.code } : {}),
        }),
      );
    });
  });
  child.on('error', () => {}); // a failed kill of a process already gone: nothing to report
  running.add(child);
  const s: ProcStream = {
    id: `pr${++seq}`,
    command,
    child,
    chunks: [],
    size: 0,
    ended: false,
    stderrTail: '',
    exit: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
    wakers: new Set(),
    pendingCalls: 0,
    timer: null,
  };
  s.exit.then(() => running.delete(child));
  const wake = () => {
    for (const w of s.wakers) w();
  };
  // 'data' listeners at once: child_process discards stdio nobody listens to when it exits
  child.stdout!.on('data', (c: Buffer) => {
    s.chunks.push(c);
    s.size += c.length;
    if (s.size >= STREAM_CHUNK_BYTES) child.stdout!.pause();
    wake();
  });
  const onEnd = () => {
    s.ended = true;
    wake();
  };
  child.stdout!.once('end', onEnd);
  child.stdout!.once('close', onEnd);
  child.stdout!.on('error', onEnd);
  child.stderr!.on('data', (c: Buffer) => {
    s.stderrTail = (s.stderrTail + c.toString('utf8')).slice(-STDERR_TAIL_BYTES);
  });
  child.stdin!.on('error', () => {}); // EPIPE after the child exited: reported by streamWrite
  procs.set(s.id, s);
  touch(s);
  return { stream: s.id, pid: child.pid ?? null };
}

function take(s: ProcStream, max: number): Buffer {
  const out: Buffer[] = [];
  let n = 0;
  while (s.chunks.length && n < max) {
    const c = s.chunks[0]!;
    if (n + c.length <= max) {
      out.push(c);
      n += c.length;
      s.chunks.shift();
    } else {
      out.push(c.subarray(0, max - n));
      s.chunks[0] = c.subarray(max - n);
      n = max;
    }
  }
  s.size -= n;
  if (s.size < STREAM_CHUNK_BYTES && !s.ended) s.child.stdout!.resume();
  return Buffer.concat(out, n);
}

export async function procReadOp(p: Params) {
  const s = procOf(p, 'streamRead');
  const waitMs = num(p, 'waitMs', 'streamRead', PROC_READ_WAIT_MS, 0, PROC_READ_WAIT_MS);
  return during(s, async () => {
    if (s.size === 0 && !s.ended && waitMs > 0) {
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(t);
          s.wakers.delete(done);
          resolve();
        };
        const t = setTimeout(done, waitMs);
        s.wakers.add(done);
      });
    }
    const data = take(s, STREAM_CHUNK_BYTES);
    const eof = s.ended && s.size === 0;
    if (!eof) return { base64: data.toString('base64'), eof: false };
    // stdout ended: the exit status follows at once, unless the child closed stdout and lives on
    let grace: NodeJS.Timeout | undefined;
    const exit = await Promise.race([
      s.exit,
      new Promise<{ code: null; signal: null }>((r) => {
        grace = setTimeout(() => r({ code: null, signal: null }), 2000);
      }),
    ]);
    clearTimeout(grace);
    return {
      base64: data.toString('base64'),
      eof: true,
      exit: { ...exit, stderr: s.stderrTail },
    };
  });
}

export async function procWriteOp(p: Params) {
  const s = procOf(p, 'streamWrite');
  const data = Buffer.from(str(p, 'base64', 'streamWrite'), 'base64');
  const w = s.child.stdin!;
  return during(s, async () => {
    try {
      await new Promise<void>((resolve, reject) => {
        if (w.destroyed || w.writableEnded) return reject(new Error('stdin is closed'));
        const onError = (err: Error) => reject(err);
        w.once('error', onError);
        const ok = w.write(data, (err) => (err ? reject(err) : undefined));
        const settle = () => {
          w.off('error', onError);
          resolve();
        };
        if (ok) settle();
        else w.once('drain', settle);
      });
    } catch (err) {
      throw new AgentError(
        'io',
        `streamWrite: ${s.command}: ${(err as Error).message}${s.stderrTail ? `; stderr: ${s.stderrTail.slice(-1000)}` : ''}`,
        { argument: 'stream' },
      );
    }
    return null;
  });
}

export async function procEndOp(p: Params) {
  const s = procOf(p, 'streamEnd');
  s.child.stdin!.end();
  touch(s);
  return null;
}

export async function procCloseOp(p: Params) {
  const s = procOf(p, 'streamClose');
  closeProc(s);
  return null;
}

const canConnect = (port: number) =>
  new Promise<boolean>((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });

/** Waits until 127.0.0.1:port accepts, the process exits (an error with its stderr) or time runs out. */
export async function procWaitPortOp(p: Params) {
  const s = procOf(p, 'procWaitPort');
  const port = num(p, 'port', 'procWaitPort', 0, 1, 65535);
  if (!port)
    throw new AgentError('invalid_params', "procWaitPort: 'port' is required", {
      argument: 'port',
    });
  const timeoutMs = num(p, 'timeoutMs', 'procWaitPort', 60_000, 1, 600_000);
  return during(s, async () => {
    const deadline = Date.now() + timeoutMs;
    let exited: { code: number | null; signal: string | null } | null = null;
    s.exit.then((e) => (exited = e));
    for (;;) {
      if (await canConnect(port)) return null;
      if (exited || !procs.has(s.id)) {
        const e = exited as { code: number | null; signal: string | null } | null;
        throw new AgentError(
          'io',
          `procWaitPort: ${s.command} exited (code ${e?.code ?? null}, signal ${e?.signal ?? null}) before 127.0.0.1:${port} accepted${s.stderrTail ? `; stderr: ${s.stderrTail.slice(-1000)}` : ''}`,
          { argument: 'port' },
        );
      }
      if (Date.now() >= deadline)
        throw new AgentError(
          'io',
          `procWaitPort: nothing accepted on 127.0.0.1:${port} within ${timeoutMs} ms (${s.command})`,
          { argument: 'port' },
        );
      await new Promise((r) => setTimeout(r, 100));
    }
  });
}
