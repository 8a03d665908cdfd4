/**
 * A session's declared resources, resolved at create before anything is allocated (spec Work
 * rule 1: a resource with no materializer is rejected before compute allocation):
 * - `file`: the tenant's file, mounted read-only data at `mount_path` (default
 *   /home/user/files/<id>/<filename>; absolute, no `..`), else a 400 naming the field;
 * - `memory_store`: the tenant's live store, mounted at /mnt/memory/<name> with its access
 *   (core/src/memory/session/resources.ts), plus the agent's own `memory_store_id`;
 * - `github_repository` / `code_host_repository`: a git repository cloned at warmup
 *   (core/src/repositories); its token comes back separately, to be sealed, never stored in the
 *   resource; refused with a 400 where the deployment has no egress enforcement point;
 * - anything else: 400 naming `resources[i].type`.
 * Proved by test/e2e/files/files.test.ts, test/e2e/memory/memory-session.test.ts and
 * test/e2e/sessions/session-repository.test.ts.
 */
import type { SessionCreate } from '@agentfleet/schemas';
import { invalid } from '../errors.js';
import { newId } from '../ids.js';
import {
  memoryStoreLookup,
  resolveMemoryResources,
  type DeclaredMemoryResource,
  type SessionMemoryResource,
} from '../memory/session/index.js';
import type { Collections } from '../store/collections.js';
import {
  isRepositoryType,
  repositoryEgressProblem,
  resolveRepository,
  type DeclaredRepository,
  type RepositorySupport,
  type SessionRepositoryResource,
} from '../repositories/index.js';

/** A file attached to a session: mounted read-only data in its sandbox at every warmup. */
export interface SessionFileResource {
  id: string;
  type: 'file';
  file_id: string;
  mount_path: string;
  created_at: string;
  updated_at: string;
}

export type SessionResource =
  SessionFileResource | SessionMemoryResource | SessionRepositoryResource;

/** A file resource for `file_id` at `mount_path` (default under /home/user/files), or a 400. */
export async function resolveFileResource(
  c: Pick<Collections, 'files'>,
  tenant: string,
  r: { file_id: string; mount_path?: string | null },
  field: string,
  now: string,
): Promise<SessionFileResource> {
  const f = (k: string) => (field ? `${field}.${k}` : k);
  const file = await c.files.get(tenant, r.file_id);
  if (!file) throw invalid(f('file_id'), `file ${r.file_id} not found`);
  const mount = r.mount_path ?? `/home/user/files/${file._id}/${file.filename}`;
  if (!mount.startsWith('/') || mount.split('/').includes('..'))
    throw invalid(f('mount_path'), 'must be an absolute path without ..');
  return {
    id: newId('sres_'),
    type: 'file',
    file_id: file._id,
    mount_path: mount,
    created_at: now,
    updated_at: now,
  };
}

/** The declared resources resolved, and the repository tokens by resource id (to seal). */
export async function resolveSessionResources(
  c: Collections,
  tenant: string,
  declared: SessionCreate['resources'],
  agentMemoryStoreId: string | null | undefined,
  now: string,
  env: { support: RepositorySupport; base_image?: string | null } = { support: {} },
): Promise<{ resources: SessionResource[]; tokens: Record<string, string> }> {
  const files = new Map<number, SessionFileResource | SessionRepositoryResource>();
  const tokens: Record<string, string> = {};
  const memory: DeclaredMemoryResource[] = [];
  for (const [i, r] of (declared ?? []).entries()) {
    if (r.type === 'file') {
      files.set(i, await resolveFileResource(c, tenant, r, `resources[${i}]`, now));
      continue;
    }
    if (isRepositoryType(r.type)) {
      const problem = repositoryEgressProblem(env.support, env);
      if (problem) throw invalid(`resources[${i}].type`, problem);
      const { resource, token } = resolveRepository(
        r as DeclaredRepository,
        `resources[${i}]`,
        now,
      );
      files.set(i, resource);
      if (token !== null) tokens[resource.id] = token;
      continue;
    }
    if (r.type === 'memory_store') {
      memory.push({ index: i, ...r });
      continue;
    }
    throw invalid(
      `resources[${i}].type`,
      `no materializer for ${(r as { type: string }).type} resources in this deployment`,
    );
  }
  const stores = await resolveMemoryResources(
    memoryStoreLookup(c),
    tenant,
    memory,
    agentMemoryStoreId,
  );
  // Declared order, then the agent's store (resolveMemoryResources keeps that order).
  const out: SessionResource[] = [];
  let next = 0;
  for (const i of (declared ?? []).keys()) out.push(files.get(i) ?? stores[next++]!);
  return { resources: [...out, ...stores.slice(next)], tokens };
}
