/**
 * The two Work API credentials at the gateway's edge (called from requestGuards.ts):
 *
 * Environment service keys (an API key created with `environment_id`): accepted only as
 * `Authorization: Bearer`, only on `/v1/environments/{that environment}/work/**`; anywhere else,
 * for another environment or through x-api-key → 403 (test/e2e/work/work-keys.test.ts).
 *
 * Claimed-session bearers (`sessions_token` of a Work claim): resolved to the live claim on
 * EVERY request (WorkService.authenticateSessionsToken reads the item; a reclaimed item's old
 * token → 401 at once, except on its heartbeat, 412, and stop, 409), then held to the spec's
 * capability table (test/e2e/work/work-bearer.test.ts):
 * - the claimed session: retrieve it; list, stream and send its events (send only while the
 *   token has not expired — an expired bearer keeps only the work calls below);
 * - files: metadata and content of files attached to the session as resources;
 * - the MCP proxy path of the claimed session (gateway/src/routes/mcpProxy.ts);
 * - its own work item: ack, heartbeat, stop;
 * - skills declared by the session's agent: list versions, retrieve and download a version,
 *   read its files (./claimedSkills.ts); any other skill → 403;
 * - memory stores attached to the session (a `memory_store` resource, or the agent's own):
 *   every read (store, memories, versions, entries, search); memory create, update and delete
 *   and version redact only with `read_write` access (./claimedMemory.ts);
 * - anything else (file listing, upload, delete; other sessions; agents; skills; listing,
 *   creating, updating, archiving or deleting memory stores; other work routes) → 403.
 */
import type { FastifyRequest } from 'fastify';
import { ApiError, type Principal, type SessionClaim, type WorkService } from '@agentfleet/core';
import { checkClaimedMemoryStore, MEMORY_STORE_ROUTES } from './claimedMemory.js';
import { CLAIMED_SKILL_ROUTES, checkClaimedSkill } from './claimedSkills.js';

const WORK_PREFIX = '/v1/environments/:id/work';
type Params = Record<string, string | undefined>;

/** An environment service key may reach only its own environment's work routes, as Bearer. */
export function checkEnvironmentKey(req: FastifyRequest, principal: Principal): void {
  const url = req.routeOptions.url ?? '';
  const params = (req.params ?? {}) as Params;
  const asBearer = req.headers['x-api-key'] === undefined;
  if (!asBearer || !url.startsWith(WORK_PREFIX) || params.id !== principal.environmentId)
    throw new ApiError(
      'forbidden',
      "environment service keys are valid only as Bearer on their environment's /work endpoints",
    );
}

const SESSION_ROUTES = new Set([
  'GET /v1/sessions/:id',
  'GET /v1/sessions/:id/events',
  'GET /v1/sessions/:id/events/stream',
]);
const SEND_EVENTS = 'POST /v1/sessions/:id/events';
const FILE_ROUTES = new Set(['GET /v1/files/:id', 'GET /v1/files/:id/content']);
const WORK_ROUTES = new Set([
  `POST ${WORK_PREFIX}/:work_id/ack`,
  `POST ${WORK_PREFIX}/:work_id/heartbeat`,
  `POST ${WORK_PREFIX}/:work_id/stop`,
]);
const MCP_PROXY = '/v1/svc/mcp-proxy/:sid/:server';

const outside = (what: string) =>
  new ApiError('forbidden', `a claimed-session bearer may not ${what}`);

/** The principal of a claimed-session bearer, or null. The claim is read live from the store. */
export async function claimedSessionPrincipal(
  work: Pick<WorkService, 'authenticateSessionsToken'>,
  token: string,
): Promise<Principal | null> {
  const claim = await work.authenticateSessionsToken(token);
  if (!claim) return null;
  return {
    tenantId: claim.tenantId,
    keyId: claim.workId,
    operator: false,
    environmentId: null,
    claim,
  };
}

/** Throws 403 (or 401 for an expired bearer appending events) outside the capability table. */
export async function checkClaimCapability(
  work: Pick<WorkService, 'claimedSession'>,
  req: FastifyRequest,
  claim: SessionClaim,
): Promise<void> {
  const url = req.routeOptions.url ?? '';
  const method = req.method === 'HEAD' ? 'GET' : req.method;
  const route = `${method} ${url}`;
  const params = (req.params ?? {}) as Params;
  if (WORK_ROUTES.has(route)) {
    if (params.id !== claim.environmentId || params.work_id !== claim.workId)
      throw outside('act on another work item');
    // A replaced claim's token learns so from heartbeat (412) and stop (409), nothing else.
    if (!claim.replaced || !route.endsWith('/ack')) return;
  }
  if (claim.replaced)
    throw new ApiError(
      'unauthorized',
      'sessions token replaced: its work item was claimed again by another worker',
    );
  if (claim.expired)
    throw new ApiError(
      'unauthorized',
      'sessions token expired: only work heartbeat and stop are allowed until a heartbeat renews it',
    );
  if (SESSION_ROUTES.has(route) || route === SEND_EVENTS) {
    if (params.id !== claim.sessionId) throw outside("use another session's APIs");
    return;
  }
  if (url === MCP_PROXY || url === `${MCP_PROXY}/*`) {
    if (params.sid !== claim.sessionId) throw outside("use another session's MCP proxy");
    return;
  }
  if (CLAIMED_SKILL_ROUTES.has(route)) {
    await checkClaimedSkill(work, claim, params.id ?? '');
    return;
  }
  if (url.startsWith(MEMORY_STORE_ROUTES)) {
    await checkClaimedMemoryStore(work, claim, method, url, params.id ?? '');
    return;
  }
  if (FILE_ROUTES.has(route)) {
    const s = await work.claimedSession(claim);
    const attached = (s?.resources ?? []).some(
      (r) => (r as { type?: string; file_id?: string }).file_id === params.id,
    );
    if (!attached) throw outside('read a file that is not attached to the claimed session');
    return;
  }
  throw outside(`call ${method} ${url || req.url.split('?')[0]} (outside the claimed session)`);
}
