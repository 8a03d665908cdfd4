/**
 * The `memory_store` session resource (SDK BetaManagedAgentsMemoryStoreResource) and the agent's
 * `memory_store_id`, resolved at session create. Guarantees:
 * - a declared store must exist in the caller's tenant and not be archived, else a 400 naming
 *   `resources[i].memory_store_id` (another tenant's store answers exactly like an unknown one);
 *   the same store declared twice is a 400 naming the second; `instructions` over 4,096
 *   characters is a 400 naming `resources[i].instructions`;
 * - the agent's `memory_store_id` mounts its store too, with `read_write` access (the agent's
 *   own memory: what it writes is expected to last); a store the session also declares is
 *   mounted once, with the declared access; an agent store that is gone or archived is a 400
 *   naming `agent`;
 * - the name and description are snapshotted (later store edits do not change the resource);
 *   the mount path is `/mnt/memory/<slug of the store name>`, unique in the session (`-2`, `-3`…
 *   on a clash), as the SDK documents (`/mnt/memory/user-preferences`).
 * Proved by test/e2e/memory/memory-session.test.ts ("bad resource refs", "agent memory_store_id").
 */
import { invalid } from '../../errors.js';
import { SANDBOX_PATHS } from '../../sandbox/shared.js';

export type MemoryAccess = 'read_write' | 'read_only';

/** As stored on the session and served (SDK BetaManagedAgentsMemoryStoreResource). */
export interface SessionMemoryResource {
  type: 'memory_store';
  memory_store_id: string;
  access: MemoryAccess;
  name: string;
  description: string;
  instructions: string | null;
  mount_path: string;
}

export interface DeclaredMemoryResource {
  /** Index in the request's `resources`. */
  index: number;
  memory_store_id: string;
  access?: MemoryAccess | null;
  instructions?: string | null;
}

/** What resolving needs of the stores: the tenant's store, or null when it is not theirs. */
export type StoreLookup = (
  tenant: string,
  storeId: string,
) => Promise<{ name: string; description: string; archived_at: string | null } | null>;

export const MAX_INSTRUCTIONS_CHARS = 4096;

/** `User Preferences!` → `user-preferences`; empty → the store id. */
export function mountSlug(name: string, storeId: string): string {
  const slug = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[-.]+|[-.]+$/g, '')
    .slice(0, 64)
    .replace(/[-.]+$/g, '');
  return slug || storeId;
}

/** The session's memory resources: the declared ones in order, then the agent's store. */
export async function resolveMemoryResources(
  lookup: StoreLookup,
  tenant: string,
  declared: DeclaredMemoryResource[],
  agentStoreId: string | null | undefined,
): Promise<SessionMemoryResource[]> {
  const out: SessionMemoryResource[] = [];
  const taken = new Set<string>();
  const mountFor = (name: string, id: string) => {
    const base = `${SANDBOX_PATHS.memory}/${mountSlug(name, id)}`;
    let path = base;
    for (let n = 2; taken.has(path); n++) path = `${base}-${n}`;
    taken.add(path);
    return path;
  };
  for (const d of declared) {
    const field = `resources[${d.index}]`;
    if (out.some((r) => r.memory_store_id === d.memory_store_id))
      throw invalid(
        `${field}.memory_store_id`,
        `memory store ${d.memory_store_id} is already attached to this session`,
      );
    if (d.instructions && d.instructions.length > MAX_INSTRUCTIONS_CHARS)
      throw invalid(
        `${field}.instructions`,
        `must be at most ${MAX_INSTRUCTIONS_CHARS} characters`,
      );
    const store = await lookup(tenant, d.memory_store_id);
    if (!store)
      throw invalid(`${field}.memory_store_id`, `memory store ${d.memory_store_id} not found`);
    if (store.archived_at)
      throw invalid(`${field}.memory_store_id`, `memory store ${d.memory_store_id} is archived`);
    out.push({
      type: 'memory_store',
      memory_store_id: d.memory_store_id,
      access: d.access ?? 'read_write',
      name: store.name,
      description: store.description ?? '',
      instructions: d.instructions ?? null,
      mount_path: mountFor(store.name, d.memory_store_id),
    });
  }
  if (agentStoreId && !out.some((r) => r.memory_store_id === agentStoreId)) {
    const store = await lookup(tenant, agentStoreId);
    if (!store || store.archived_at)
      throw invalid(
        'agent',
        `the agent's memory_store_id ${agentStoreId} is ${store ? 'archived' : 'not found'}; update the agent or the store`,
      );
    out.push({
      type: 'memory_store',
      memory_store_id: agentStoreId,
      access: 'read_write',
      name: store.name,
      description: store.description ?? '',
      instructions: null,
      mount_path: mountFor(store.name, agentStoreId),
    });
  }
  return out;
}

/**
 * Agent create/update `memory_store_id`: null clears it; otherwise the tenant's live store, else
 * a 400 naming `memory_store_id` (another tenant's store answers like a missing one).
 */
export async function checkAgentMemoryStore(
  lookup: StoreLookup,
  tenant: string,
  storeId: string | null | undefined,
): Promise<void> {
  if (storeId === undefined || storeId === null) return;
  const store = await lookup(tenant, storeId);
  if (!store) throw invalid('memory_store_id', `memory store ${storeId} not found`);
  if (store.archived_at) throw invalid('memory_store_id', `memory store ${storeId} is archived`);
}

export const isMemoryResource = (r: unknown): r is SessionMemoryResource =>
  (r as { type?: unknown } | null)?.type === 'memory_store';
