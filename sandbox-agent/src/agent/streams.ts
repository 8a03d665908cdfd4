/**
 * Open archive/extract streams: the registry (ids, idle timeout, a cap on open streams) and the
 * methods shared by both directions (streamRead, streamWrite, streamEnd, streamClose).
 */
import type { ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';
import { AgentError, STREAM_CHUNK_BYTES } from '../protocol.js';
import { killGroup, running } from './exec.js';
import { fsError, str, type Params } from './params.js';

// Streamed transfers: archives travel in chunks of at most STREAM_CHUNK_BYTES, so neither side
// ever holds a whole archive (the host parses and stores them as they come).
//
//   archiveOpen  { dir, maxFileBytes?, unchanged? }  → { stream, skipped: [{ name, size, reason }] }
//   extractOpen  { dir }                 → { stream }
//   streamRead   { stream }              → { base64, eof }      (archive streams)
//   streamWrite  { stream, base64 }      → null                 (extract streams)
//   streamEnd    { stream }              → null                 (extract: waits for the unpacking)
//   streamClose  { stream }              → null                 (either: abandons it)
//
// With maxFileBytes, regular files larger than that are left out of the archive before anything
// is read (a sparse 1 GiB file costs nothing) and listed in `skipped` with reason 'too_large'.
// `unchanged` ({ relative name: 'size:mtime seconds' }) leaves out files the host already has.
// A stream untouched for STREAM_IDLE_MS is closed; at most MAX_OPEN_STREAMS are open at once.

export const STREAM_IDLE_MS = 5 * 60_000;
export const MAX_OPEN_STREAMS = 8;
/** Largest number of entries a filtered archive lists (the file list is held in memory). */
export const MAX_WALK_ENTRIES = 200_000;

export interface OpenStream {
  id: string;
  op: 'archive' | 'extract';
  dir: string;
  /** archive: the tar.gz bytes. */
  readable?: Readable;
  /** extract: where the tar.gz bytes go. */
  writable?: Writable;
  child?: ChildProcess;
  stderr: string;
  /** Resolves once the producer/consumer finished (rejects with its error). */
  done: Promise<void>;
  timer: NodeJS.Timeout | null;
}

export const openStreams = new Map<string, OpenStream>();
export let streamSeq = 0;

export function touch(s: OpenStream): void {
  if (s.timer) clearTimeout(s.timer);
  s.timer = setTimeout(() => closeStream(s), STREAM_IDLE_MS);
  s.timer.unref?.();
}

export function closeStream(s: OpenStream): void {
  if (s.timer) clearTimeout(s.timer);
  openStreams.delete(s.id);
  if (s.child) {
    running.delete(s.child);
    killGroup(s.child);
  }
  s.readable?.destroy();
  s.writable?.destroy();
  s.done.catch(() => {});
}

export function registerStream(s: Omit<OpenStream, 'id' | 'timer'>): OpenStream {
  const full: OpenStream = { ...s, id: `st${++streamSeq}`, timer: null };
  openStreams.set(full.id, full);
  touch(full);
  return full;
}

export function streamOf(p: Params, method: string, op: OpenStream['op']): OpenStream {
  const id = str(p, 'stream', method);
  const s = openStreams.get(id);
  if (!s || s.op !== op)
    throw new AgentError('not_found', `${method}: no open ${op} stream '${id}'`, {
      argument: 'stream',
    });
  touch(s);
  return s;
}

export function checkStreamRoom(method: string): void {
  if (openStreams.size >= MAX_OPEN_STREAMS)
    throw new AgentError('too_large', `${method}: ${MAX_OPEN_STREAMS} streams are open already`, {
      argument: 'stream',
    });
}

/** Spawns tar in its own process group; `done` resolves when it exits with an accepted code. */
export function readUpTo(r: Readable, max: number): Promise<{ data: Buffer; eof: boolean }> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      r.off('readable', onReadable);
      r.off('end', onEnd);
      r.off('error', onError);
      r.off('close', onEnd);
    };
    const finish = (eof: boolean) => {
      cleanup();
      resolve({ data: Buffer.concat(parts, size), eof });
    };
    function onReadable() {
      let c: Buffer | null;
      while (size < max && (c = r.read() as Buffer | null) !== null) {
        if (size + c.length > max) {
          const keep = max - size;
          parts.push(c.subarray(0, keep));
          r.unshift(c.subarray(keep));
          size = max;
          break;
        }
        parts.push(c);
        size += c.length;
      }
      if (size >= max) finish(false);
    }
    function onEnd() {
      finish(true);
    }
    function onError(err: Error) {
      cleanup();
      reject(err);
    }
    if (r.readableEnded || r.destroyed) return finish(true);
    r.on('readable', onReadable);
    r.once('end', onEnd);
    r.once('close', onEnd);
    r.once('error', onError);
    onReadable();
  });
}

export async function streamReadOp(p: Params) {
  const s = streamOf(p, 'streamRead', 'archive');
  let chunk: { data: Buffer; eof: boolean };
  try {
    chunk = await readUpTo(s.readable!, STREAM_CHUNK_BYTES);
    if (chunk.eof) await s.done; // the producer's verdict: a failed tar is an error, not a short archive
  } catch (err) {
    closeStream(s);
    throw fsError(err, 'archive', s.dir);
  }
  if (chunk.eof) closeStream(s);
  return { base64: chunk.data.toString('base64'), eof: chunk.eof };
}

export async function streamWriteOp(p: Params) {
  const s = streamOf(p, 'streamWrite', 'extract');
  const data = Buffer.from(str(p, 'base64', 'streamWrite'), 'base64');
  const w = s.writable!;
  try {
    await new Promise<void>((resolve, reject) => {
      const onError = (err: Error) => reject(err);
      w.once('error', onError);
      const ok = w.write(data, (err) => {
        if (err) reject(err);
      });
      const settle = () => {
        w.off('error', onError);
        resolve();
      };
      if (ok) settle();
      else w.once('drain', settle);
    });
  } catch (err) {
    const reason = await s.done.then(
      () => err,
      (e: unknown) => e,
    );
    closeStream(s);
    throw fsError(reason, 'extract', s.dir);
  }
  return null;
}

export async function streamEndOp(p: Params) {
  const s = streamOf(p, 'streamEnd', 'extract');
  s.writable!.end();
  try {
    await s.done;
  } catch (err) {
    throw fsError(err, 'extract', s.dir);
  } finally {
    closeStream(s);
  }
  return null;
}

export async function streamCloseOp(p: Params) {
  const id = str(p, 'stream', 'streamClose');
  const s = openStreams.get(id);
  if (s) closeStream(s);
  return null;
}
