/**
 * The protocol server: reads JSON-RPC lines, dispatches each request to its method's handler and
 * answers with its result or error (toRpcError); createHandlers names every method (the host's
 * list: AGENT_METHODS in core/src/sandbox/protocol.ts).
 */
import type { Readable, Writable } from 'node:stream';
import { lineSplitter } from '../lineSplitter.js';
import { AgentError, ERROR_CODES, MAX_LINE_BYTES, type RpcErrorObject } from '../protocol.js';
import { archiveOpenOp } from './archiveStream.js';
import { execCommand } from './exec.js';
import { extractOpenOp } from './extractStream.js';
import { editOp, globOp, grepOp, listOp, readFileOp, writeFileOp } from './files.js';
import { httpLocalOp } from './httpLocal.js';
import type { Params } from './params.js';
import {
  isProcStream,
  procCloseOp,
  procEndOp,
  procOpenOp,
  procReadOp,
  procWaitPortOp,
  procWriteOp,
} from './procStream.js';
import { streamCloseOp, streamEndOp, streamReadOp, streamWriteOp } from './streams.js';

export type Handler = (params: Params) => Promise<unknown>;

export function createHandlers(): Record<string, Handler> {
  return {
    ping: async () => null,
    exec: execCommand,
    readFile: readFileOp,
    writeFile: writeFileOp,
    edit: editOp,
    glob: globOp,
    grep: grepOp,
    list: listOp,
    archiveOpen: archiveOpenOp,
    extractOpen: extractOpenOp,
    procOpen: procOpenOp,
    procWaitPort: procWaitPortOp,
    httpLocal: httpLocalOp,
    // the stream methods serve archive/extract streams (streams.ts) and processes (procStream.ts)
    streamRead: (p) => (isProcStream(p) ? procReadOp(p) : streamReadOp(p)),
    streamWrite: (p) => (isProcStream(p) ? procWriteOp(p) : streamWriteOp(p)),
    streamEnd: (p) => (isProcStream(p) ? procEndOp(p) : streamEndOp(p)),
    streamClose: (p) => (isProcStream(p) ? procCloseOp(p) : streamCloseOp(p)),
  };
}

export function toRpcError(err: unknown): RpcErrorObject {
  if (err instanceof AgentError) {
    return { code: err.code, message: err.message, data: { kind: err.kind, ...err.detail } };
  }
  const e = err as Error;
  return {
    code: ERROR_CODES.internal,
    message: e?.message ?? String(err),
    data: { kind: 'internal' },
  };
}

/** Serves JSON-RPC lines from `input`, answers on `output`; calls `onEnd` when the input ends. */
export function serve(
  input: Readable,
  output: Writable,
  handlers: Record<string, Handler>,
  onEnd: () => void,
): void {
  const send = (msg: unknown) => output.write(`${JSON.stringify(msg)}\n`);
  const onLine = (line: string) => {
    let msg: { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: unknown };
    try {
      msg = JSON.parse(line);
    } catch {
      send({
        jsonrpc: '2.0',
        id: null,
        error: {
          code: ERROR_CODES.parse_error,
          message: 'parse error: the line is not JSON',
          data: { kind: 'parse_error' },
        },
      });
      return;
    }
    const id = msg && (typeof msg.id === 'number' || typeof msg.id === 'string') ? msg.id : null;
    if (
      !msg ||
      typeof msg !== 'object' ||
      msg.jsonrpc !== '2.0' ||
      typeof msg.method !== 'string'
    ) {
      send({
        jsonrpc: '2.0',
        id,
        error: {
          code: ERROR_CODES.invalid_request,
          message: 'invalid request: expected a JSON-RPC 2.0 request',
          data: { kind: 'invalid_request' },
        },
      });
      return;
    }
    if (id === null) return; // notifications: nothing to answer
    const handler = Object.prototype.hasOwnProperty.call(handlers, msg.method)
      ? handlers[msg.method]
      : undefined;
    if (!handler) {
      send({
        jsonrpc: '2.0',
        id,
        error: {
          code: ERROR_CODES.method_not_found,
          message: `method not found: ${msg.method}`,
          data: { kind: 'method_not_found', argument: 'method' },
        },
      });
      return;
    }
    const params =
      msg.params && typeof msg.params === 'object' && !Array.isArray(msg.params)
        ? (msg.params as Params)
        : {};
    Promise.resolve()
      .then(() => handler(params))
      .then(
        (result) => send({ jsonrpc: '2.0', id, result: result ?? null }),
        (err) => send({ jsonrpc: '2.0', id, error: toRpcError(err) }),
      );
  };
  const split = lineSplitter(onLine, (bytes) => {
    send({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: ERROR_CODES.invalid_request,
        message: `request line over ${MAX_LINE_BYTES} bytes (${bytes}) dropped`,
        data: { kind: 'too_large' },
      },
    });
  });
  input.on('data', (c: Buffer) => split(c));
  input.once('end', onEnd);
  input.once('close', onEnd);
}
