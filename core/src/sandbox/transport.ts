/**
 * The sandbox protocol's transports, host side: a newline-delimited message stream
 * (AgentTransport) over a pair of Node streams, and the bounded line reader every transport
 * reads with (the Nomad TCP transport too, sandbox/drivers/nomad/transport.ts): lines split under the
 * client's limit (answerLimits.ts), never buffered past it, and the source paused for a turn of
 * the event loop after READ_SLICE_BYTES, so one busy sandbox cannot hold the process. Proved by
 * core/test/sandbox.answers.test.ts and core/test/sandbox.local.test.ts.
 */
import type { Readable, Writable } from 'node:stream';
import { MAX_LINE_BYTES, lineSplitter } from '@agentfleet/sandbox-agent';

/** A newline-delimited message stream: `send` one line (no newline), receive lines, learn of the end. */
export interface AgentTransport {
  send(line: string): void;
  onLine(listener: (line: string) => void): void;
  onClose(listener: (reason?: Error) => void): void;
  close(): void;
  /** Bounds the lines read from now on (a line over it closes the transport, never buffered). */
  limitLines?(limit: () => number): void;
}

/** Bytes a transport reads from its stream in one turn of the event loop before it yields. */
export const READ_SLICE_BYTES = 4 * 1024 * 1024;

/**
 * The read side every transport shares: lines split under the client's limit, and the source
 * paused for a turn of the event loop after READ_SLICE_BYTES (`pause`/`resume` of the stream).
 */
export function boundedLineReader(o: {
  onLine: (line: string) => void;
  onTooLong: (bytes: number) => void;
  pause: () => void;
  resume: () => void;
}): { push: (chunk: Buffer) => void; limitLines: (limit: () => number) => void } {
  let limit: () => number = () => MAX_LINE_BYTES;
  let slice = 0;
  let yielding = false;
  const split = lineSplitter(o.onLine, o.onTooLong, () => limit());
  return {
    push(chunk) {
      split(chunk);
      slice += chunk.length;
      if (slice >= READ_SLICE_BYTES && !yielding) {
        yielding = true;
        o.pause();
        setImmediate(() => {
          yielding = false;
          slice = 0;
          o.resume();
        });
      }
    },
    limitLines(l) {
      limit = l;
    },
  };
}

/** A transport over a pair of Node streams (e.g. a child's stdout and stdin). */
export function nodeStreamTransport(readable: Readable, writable: Writable): AgentTransport {
  const lineListeners: Array<(line: string) => void> = [];
  const closeListeners: Array<(reason?: Error) => void> = [];
  let closed = false;
  const fireClose = (reason?: Error) => {
    if (closed) return;
    closed = true;
    for (const l of closeListeners) l(reason);
  };
  const reader = boundedLineReader({
    onLine: (line) => {
      for (const l of lineListeners) l(line);
    },
    onTooLong: (bytes) =>
      fireClose(new Error(`the agent sent a line over the limit (${bytes} bytes)`)),
    pause: () => readable.pause(),
    resume: () => readable.resume(),
  });
  readable.on('data', (chunk: Buffer | string) =>
    reader.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk),
  );
  readable.once('end', () => fireClose());
  readable.once('close', () => fireClose());
  readable.once('error', (err) => fireClose(err));
  writable.on('error', (err) => fireClose(err));
  return {
    send(line) {
      if (closed) throw new Error('stream closed');
      writable.write(`${line}\n`);
    },
    onLine: (l) => void lineListeners.push(l),
    onClose: (l) => void closeListeners.push(l),
    close() {
      writable.end();
      fireClose();
    },
    limitLines: reader.limitLines,
  };
}
