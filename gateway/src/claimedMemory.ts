/**
 * A claimed-session bearer and memory stores (spec capability table: "memory store — access
 * only an attached store; mutations need read_write"), checked on every request against the
 * session's resources as stored (a `memory_store` resource, or the agent's own store):
 * - a store attached to the claimed session: every GET and the search (a read);
 * - memory create, update, delete and version redact: only when attached `read_write`;
 * - the store itself (update, archive, delete) and any unattached store → 403 forbidden.
 * Called from ./claimedSession.ts; proved by test/e2e/memory/memory-session-bearer.test.ts.
 */
import { ApiError, isMemoryResource, type SessionClaim, type WorkService } from '@agentfleet/core';

/** Every memory store route is `/v1/memory_stores/:id…` (the collection itself is refused). */
export const MEMORY_STORE_ROUTES = '/v1/memory_stores/:id';

const MEMORY_MUTATIONS = new Set([
  'POST /v1/memory_stores/:id/memories',
  'POST /v1/memory_stores/:id/memories/:memory_id',
  'DELETE /v1/memory_stores/:id/memories/:memory_id',
  'POST /v1/memory_stores/:id/memory_versions/:version_id/redact',
]);
const READ_POSTS = new Set(['POST /v1/memory_stores/:id/search']);

const refused = (what: string) =>
  new ApiError('forbidden', `a claimed-session bearer may not ${what}`);

export async function checkClaimedMemoryStore(
  work: Pick<WorkService, 'claimedSession'>,
  claim: SessionClaim,
  method: string,
  url: string,
  storeId: string,
): Promise<void> {
  const s = await work.claimedSession(claim);
  const attached = (s?.resources ?? [])
    .filter(isMemoryResource)
    .find((r) => r.memory_store_id === storeId);
  if (!attached) throw refused('use a memory store that is not attached to the claimed session');
  const route = `${method} ${url}`;
  if (method === 'GET' || READ_POSTS.has(route)) return;
  if (!MEMORY_MUTATIONS.has(route))
    throw refused(`call ${route} (memory stores themselves are managed with an API key)`);
  if (attached.access !== 'read_write')
    throw refused(`change memories of ${storeId}: it is attached read_only`);
}
