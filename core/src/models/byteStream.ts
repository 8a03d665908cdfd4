/**
 * A model reply's body as bytes, from either HTTP client the providers use: a WHATWG stream (a
 * `fetch` Response's, a tenant card's egressFetch) or a Node stream (undici `request`'s, the
 * default path). parseSSE (./providerHelpers.ts) reads it through one ByteReader, which
 * keeps the connection when the reply was read to its last event and closes it otherwise.
 * Tests: core/test/model-providers.shared.test.ts (kept-alive connection, parseSSE on a Node
 * stream) and the contract's "closes the connection when the consumer stops iterating early".
 */

/**
 * A response body: a WHATWG stream (a `fetch` Response's) or a Node stream (undici `request`'s,
 * postForEventStream's default path). parseSSE reads either.
 */
export type ByteStream = ReadableStream<Uint8Array> | NodeBody;

type NodeBody = AsyncIterable<Uint8Array> & {
  destroy(error?: Error): unknown;
  readonly readableEnded?: boolean;
  /** undici's: reads the rest (up to 128 KiB, else destroys), so the connection is kept. */
  dump?(): Promise<unknown>;
};

/** The reason parseSSE cancels a body its consumer stopped reading before the reply ended. */
export const STOPPED = 'stopped before the end of the reply';

interface ByteReader {
  read(): Promise<IteratorResult<Uint8Array, unknown>>;
  /** Stopped early or aborted: the body is dropped and its connection closed. */
  cancel(reason: unknown): Promise<void>;
  /** The decoder read the protocol's last event: the body is released, its connection kept. */
  finish(): Promise<void>;
  releaseLock(): void;
}

export function readerOf(body: ByteStream): ByteReader {
  if (body instanceof ReadableStream) {
    const r = body.getReader();
    return {
      read: () => r.read(),
      cancel: (reason) => r.cancel(reason),
      finish: () => r.cancel(),
      releaseLock: () => r.releaseLock(),
    };
  }
  const it = body[Symbol.asyncIterator]();
  return {
    read: () => it.next(),
    // A pending read then rejects (premature close); parseSSE reports the abort.
    cancel: async () => {
      if (!body.readableEnded) body.destroy();
    },
    // Only the last bytes (the chunked terminator) are left: they are read in the background so
    // the keep-alive connection serves the next request. Not awaited: a server that stalls
    // there must not hold the turn (undici's body timeout ends it).
    finish: async () => {
      if (body.readableEnded) return;
      if (body.dump) void body.dump().catch(() => {});
      else body.destroy();
    },
    releaseLock: () => {},
  };
}
