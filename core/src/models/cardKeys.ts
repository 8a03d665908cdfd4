/**
 * `GET /v1/svc/model_cards/:id/key`: a model card's cleartext key, for agent workers only
 * (spec "Models and model cards": internal, not public).
 *
 * Caller authentication: the internal worker credential, derived with HKDF-SHA256 from
 * PLATFORM_ROOT_SECRET (info `internal-worker-credential-v1`, distinct from the secret box's
 * key). Why this and not an API key: every process that runs turns already holds the root
 * secret (it opens the sealed keys), so a worker out of process derives the credential itself
 * with nothing new to distribute; no tenant ever holds the root secret, so no tenant key can
 * equal it; and the operator key is a person's administration key, which has no business
 * reading tenants' vendor keys. Rotating the root secret rotates the credential.
 *
 * Guarantees (tested in test/e2e/models/model-cards-full.test.ts, "internal key route"):
 * - any caller without it (no credential, a tenant key, the operator key, a wrong guess) →
 *   403 forbidden, the same whatever card id is asked, so the route tells a tenant nothing
 *   (the route is outside the API-key scheme, so it never answers the scheme's 401);
 * - the worker credential reads any tenant's card by id (ids are global); an unknown id → 404.
 */
import { hkdfSync } from 'node:crypto';
import { safeEqual, type SecretBox } from '../crypto.js';
import { ApiError, notFound } from '../errors.js';
import type { Collections } from '../store/collections.js';

const PREFIX = 'afw_';

/** The internal worker credential of a deployment (same in every process of it). */
export function workerCredential(rootSecret: string): string {
  const key = hkdfSync('sha256', rootSecret, 'agentfleet', 'internal-worker-credential-v1', 32);
  return PREFIX + Buffer.from(key).toString('base64url');
}

/** Refuses every caller but the internal worker credential (403, whatever was presented). */
export function checkWorkerCaller(presented: string | undefined, rootSecret: string): void {
  if (!presented || !safeEqual(presented, workerCredential(rootSecret)))
    throw new ApiError('forbidden', 'this endpoint is internal to the agent workers');
}

/** The cleartext key of card `id`, read live (a rotation shows on the next read). */
export async function readCardKey(
  c: Collections,
  secrets: SecretBox,
  id: string,
): Promise<{ id: string; type: 'model_card_key'; tenant_id: string; api_key: string }> {
  const [card] = await c.modelCards.scanAll({ _id: id }, { limit: 1 });
  if (!card) throw notFound('model card', id);
  return {
    id: card._id,
    type: 'model_card_key',
    tenant_id: card.tenant_id,
    api_key: secrets.open(card.api_key_sealed, 'model-card-key'),
  };
}
