/**
 * Object store port: snapshots, spilled events, outputs and files. Embedded: a directory;
 * real: GridFS or an S3-compatible store. Keys are `/`-separated paths; a put is atomic (a
 * reader sees the old object or the new one, never a part) and durable once it resolves.
 */
export interface ObjectInfo {
  key: string;
  size: number;
  modifiedAt: string;
  contentType?: string;
}

export interface ObjectStore {
  put(key: string, data: Uint8Array, options?: { contentType?: string }): Promise<void>;
  get(key: string): Promise<Uint8Array | null>;
  head(key: string): Promise<ObjectInfo | null>;
  delete(key: string): Promise<void>;
  /** Objects whose key starts with `prefix`, in key order. */
  list(prefix: string): Promise<ObjectInfo[]>;
}
