/**
 * What a session's memory stores put in its sandbox at every warmup (spec "Sandbox warmup"
 * step 4): each store's directory at its mount path, every live memory as a file at
 * `<mount_path><memory path>` with exactly its content, and the store's manifest (path → memory
 * id and content_sha256 as mounted) at MANIFEST_DIR/<store id>.json, the base the write-back at
 * idle diffs against (./writeBack.ts). A `read_only` store's directory and files are a
 * read-only tree (SandboxResource.readOnly): the driver mounts it read-only, so every change
 * under it fails with EROFS in the sandbox (test/e2e/memory/memory-session.test.ts, "read_only access";
 * test/e2e/memory/memory-session-nomad.test.ts). Guarantees: a store that cannot be read (deleted since
 * the session was created, or the read fails) throws, so the warmup FAILS rather than starting
 * a sandbox without its memory; the manifest is written after the files, from the same read.
 * Proved by test/e2e/memory/memory-session.test.ts ("mounts", "a deleted store fails warmup").
 */
import { createHash } from 'node:crypto';
import type { SandboxResource } from '../../sandbox/manager/types.js';
import type { SessionMemoryResource } from './resources.js';

/** Inside the sandbox: where the manifests live (outside every mount, not snapshotted). */
export const MANIFEST_DIR = '/tmp/.agentfleet/memory';

export interface MountedMemory {
  id: string;
  path: string;
  content: string;
}

/** The memory port the mount and the write-back use (platform.memory behind it: ./readers.ts). */
export interface MemoryReader {
  /** Every live memory of the store with its content; throws when the store cannot be read. */
  readAll(tenant: string, storeId: string): Promise<MountedMemory[]>;
}

/** The state of a mounted store: memory path → its id and the hash of the content mounted. */
export interface MemoryManifest {
  memory_store_id: string;
  mount_path: string;
  files: Record<string, { id: string; sha256: string }>;
}

export const contentSha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
export const manifestPath = (storeId: string) => `${MANIFEST_DIR}/${storeId}.json`;

/** The sandbox resources of the session's memory stores, in mount order. */
export async function memoryMountResources(
  reader: MemoryReader,
  tenant: string,
  resources: SessionMemoryResource[],
): Promise<SandboxResource[]> {
  const out: SandboxResource[] = [];
  for (const r of resources) {
    let memories: MountedMemory[];
    try {
      memories = await reader.readAll(tenant, r.memory_store_id);
    } catch (err) {
      throw new Error(
        `memory store ${r.memory_store_id} (${r.mount_path}) could not be read: ${(err as Error)?.message ?? String(err)}`,
      );
    }
    const manifest: MemoryManifest = {
      memory_store_id: r.memory_store_id,
      mount_path: r.mount_path,
      files: {},
    };
    // read_only: the tree the driver mounts read-only (EROFS on every change inside)
    const readOnly = r.access === 'read_only' ? { readOnly: true } : {};
    out.push({
      path: r.mount_path,
      directory: true,
      data: async () => new Uint8Array(),
      ...readOnly,
    });
    for (const m of memories) {
      const bytes = Buffer.from(m.content, 'utf8');
      manifest.files[m.path] = { id: m.id, sha256: contentSha256(m.content) };
      out.push({ path: `${r.mount_path}${m.path}`, data: async () => bytes, ...readOnly });
    }
    const json = Buffer.from(JSON.stringify(manifest));
    out.push({ path: manifestPath(r.memory_store_id), data: async () => json });
  }
  return out;
}
