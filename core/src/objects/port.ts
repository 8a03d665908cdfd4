/**
 * Object store port: snapshots, spilled events, outputs and files. Keys are `/`-separated
 * paths; a put is atomic (a reader sees the old object or the new one, never a part) and
 * durable once it resolves. Streamed puts and gets (putStream/getStream) keep large objects out
 * of memory.
 *
 * Implementations (chosen by the composition root, server/src/components.ts):
 * - core/src/objects/directory.ts: a directory (the embedded default; shared by the
 *   processes of one machine);
 * - core/src/objects/gridfs/objectStore.ts: GridFS on the fleet's MongoDB (fleet mode, shared by
 *   every machine).
 * Both pass core/test/objectStore.contract.ts (run by core/test/objectStore.test.ts).
 */
import type { Readable } from 'node:stream';

export interface ObjectInfo {
  key: string;
  size: number;
  modifiedAt: string;
  contentType?: string;
}

/** A streamed put whose source was longer than its `maxBytes`: nothing was stored. */
export class ObjectTooLargeError extends Error {
  override readonly name = 'ObjectTooLargeError';
  constructor(
    readonly key: string,
    readonly maxBytes: number,
  ) {
    super(`object '${key}' exceeds ${maxBytes} bytes: nothing stored`);
  }
}

export interface ObjectStore {
  put(key: string, data: Uint8Array, options?: { contentType?: string }): Promise<void>;
  /**
   * A put whose bytes arrive as a stream (never held whole in memory); atomic like put: a source
   * that fails, or exceeds `maxBytes` (ObjectTooLargeError), leaves nothing stored and the old
   * object, if any, in place. Resolves with the number of bytes stored.
   */
  putStream(
    key: string,
    data: AsyncIterable<Uint8Array>,
    options?: { contentType?: string; maxBytes?: number },
  ): Promise<{ size: number }>;
  get(key: string): Promise<Uint8Array | null>;
  /** The object's bytes as a stream, or null when there is no such object. */
  getStream(key: string): Promise<Readable | null>;
  head(key: string): Promise<ObjectInfo | null>;
  delete(key: string): Promise<void>;
  /** Objects whose key starts with `prefix`, in key order. */
  list(prefix: string): Promise<ObjectInfo[]>;
}
