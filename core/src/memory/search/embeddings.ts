/**
 * Embedding models for memory search: which model embeds a store, and the client of its
 * OpenAI-compatible `POST {base_url}/embeddings` ({model, input: string[]} →
 * {data: [{embedding: number[], index}]}).
 *
 * Which model (decided here, documented in docs/api-semantics.md, memory):
 * - A model card is an embedding model when its `pi_config.embedding` is `true` (a descriptive
 *   pi_config key, kept as sent by the card validation) and it speaks the OpenAI protocol
 *   (provider openai, oai, oai-compatible, openai-compatible, or pi_config.api openai-*). Its
 *   `model` is the wire model, its `base_url` (default https://api.openai.com/v1) the endpoint,
 *   its sealed api_key the bearer and its sealed custom headers go along.
 * - A store's `embedding_model` names such a card (model_id, or card id) in the store's tenant
 *   (or the platform default's name, which may be an operator card). A store without one uses the
 *   platform default MEMORY_EMBEDDING_MODEL, looked up in the store's tenant first, else among
 *   the operator's cards (tnt_default). Neither → lexical search.
 * - Store create/update (checkEmbeddingModel) refuses a name that resolves to no embedding model
 *   with a 400 naming `embedding_model` and listing the workspace's embedding models.
 * - At search, a model that can no longer be used (card deleted or changed, the platform
 *   default naming nothing) is lexical search with the reason (chooseEmbeddingModel).
 *
 * Egress: a card of a tenant other than the operator's reaches its base_url through the
 * platform's egress policy (private addresses refused unless EGRESS_ALLOW_PRIVATE_HOSTS opens
 * them), like model turns; the operator's cards are operator configuration. A failing endpoint
 * is an EmbeddingError (message without the key); callers decide (writes log and retry lazily,
 * search falls back to lexical and says so). Proved by test/e2e/memory/memory-search.test.ts.
 */
import type { SecretBox } from '../../crypto.js';
import type { Collections } from '../../store/collections.js';
import type { ModelCardDoc } from '../../models/records.js';
import { DEFAULT_TENANT } from '../../auth/auth.js';
import { providerProtocol } from '../../models/protocols.js';
import type { HttpFetch } from '../../egress/dispatcher.js';
import { invalid } from '../../errors.js';

/** A resolved embedding model: what identifies it in persisted vectors, and how to call it. */
export interface EmbeddingModel {
  /** The card's model_id (shown in search answers). */
  name: string;
  /** Identity of the vector space: card id + wire model; a change re-embeds lazily. */
  key: string;
  embed(texts: string[]): Promise<Float32Array[]>;
}

/** The endpoint failed or answered something else than embeddings (never carries the key). */
export class EmbeddingError extends Error {
  override readonly name = 'EmbeddingError';
}

const EMBED_TIMEOUT_MS = 30_000;
/** Inputs per request (OpenAI accepts 2048; smaller keeps requests bounded). */
export const EMBED_BATCH = 128;
/** Characters of a memory sent for embedding (memories are ≤ 100 KB; models take ~8k tokens). */
export const EMBED_MAX_CHARS = 8_000;

export function isEmbeddingCard(card: ModelCardDoc): boolean {
  if (card.pi_config?.embedding !== true) return false;
  const api = card.pi_config?.api;
  return (
    providerProtocol(card.provider)?.protocol === 'openai' ||
    (typeof api === 'string' && api.startsWith('openai'))
  );
}

export interface EmbeddingDeps {
  c: Collections;
  secrets: SecretBox;
  /** HTTP under the egress policy, for tenants' base_urls. */
  tenantFetch: HttpFetch;
  /** MEMORY_EMBEDDING_MODEL (null = none). */
  platformDefault: string | null;
  /** HTTP for the operator's own cards (default: global fetch). */
  operatorFetch?: HttpFetch;
}

/** The embedding model of a store, or why there is none (the store is searched lexically). */
export type EmbeddingChoice = { model: EmbeddingModel } | { model: null; reason: string };

const cardNamed = async (d: EmbeddingDeps, tenant: string, name: string, named: boolean) => {
  // By model_id (a card's name), or by the card's id.
  const which = { $or: [{ model_id: name }, { _id: name }] };
  const card = await d.c.modelCards.findOne(tenant, which);
  if (card || tenant === DEFAULT_TENANT || (named && name !== d.platformDefault)) return card;
  return d.c.modelCards.findOne(DEFAULT_TENANT, which);
};

const NOT_EMBEDDING = 'it needs pi_config.embedding = true and an OpenAI-compatible provider';

export async function chooseEmbeddingModel(
  d: EmbeddingDeps,
  tenant: string,
  storeModel: string | null | undefined,
): Promise<EmbeddingChoice> {
  const named = storeModel || null;
  const name = named ?? d.platformDefault;
  if (!name)
    return {
      model: null,
      reason: 'no embedding model: the store names none and MEMORY_EMBEDDING_MODEL is not set',
    };
  const card = await cardNamed(d, tenant, name, !!named);
  const source = named ? "the store's embedding_model" : 'the platform default';
  if (!card) return { model: null, reason: `${source} '${name}' names no model card` };
  if (!isEmbeddingCard(card))
    return {
      model: null,
      reason: `${source} '${name}' is not an embedding model (${NOT_EMBEDDING})`,
    };
  return { model: cardModel(d, card) };
}

/** The embedding model of a store; null = none usable (lexical search). */
export async function resolveEmbeddingModel(
  d: EmbeddingDeps,
  tenant: string,
  storeModel: string | null | undefined,
): Promise<EmbeddingModel | null> {
  return (await chooseEmbeddingModel(d, tenant, storeModel)).model;
}

/** Embedding models a store of the tenant may name (model_ids; the platform default last). */
export async function availableEmbeddingModels(d: EmbeddingDeps, tenant: string) {
  const cards = await d.c.modelCards.find(
    tenant,
    { 'pi_config.embedding': true },
    { sort: { model_id: 1 }, limit: 100 },
  );
  const names = cards.filter(isEmbeddingCard).map((c) => c.model_id);
  const dflt = d.platformDefault;
  if (dflt && !names.includes(dflt) && (await chooseEmbeddingModel(d, tenant, null)).model)
    names.push(dflt);
  return names;
}

/**
 * A store's `embedding_model` at create/update: it must name an embedding model of the
 * workspace (or the platform default); otherwise a 400 naming `embedding_model` that lists
 * what is available (test/e2e/memory/memory-search.test.ts › 'embedding_model is validated').
 */
export async function checkEmbeddingModel(
  d: EmbeddingDeps,
  tenant: string,
  name: string,
): Promise<void> {
  const card = await cardNamed(d, tenant, name, true);
  if (card && isEmbeddingCard(card)) return;
  const available = await availableEmbeddingModels(d, tenant);
  const why = card
    ? `model card '${name}' is not an embedding model (${NOT_EMBEDDING})`
    : `no embedding model '${name}' in this workspace`;
  throw invalid(
    'embedding_model',
    `${why}; available: ${available.length ? available.join(', ') : 'none'} (omit it for the platform default${d.platformDefault ? '' : ', which is unset: lexical search'})`,
  );
}

function cardModel(d: EmbeddingDeps, card: ModelCardDoc): EmbeddingModel {
  const restricted = card.tenant_id !== DEFAULT_TENANT && !!card.base_url;
  const http = restricted ? d.tenantFetch : (d.operatorFetch ?? fetch);
  const base = (card.base_url ?? 'https://api.openai.com/v1').replace(/\/+$/, '');
  return {
    name: card.model_id,
    key: `${card._id}:${card.model}`,
    embed: async (texts) => {
      // The credential is read live on every call (a rotated key applies at once).
      const apiKey = d.secrets.open(card.api_key_sealed, 'model-card-key');
      const headers = card.custom_headers_sealed
        ? (JSON.parse(d.secrets.open(card.custom_headers_sealed, 'model-card-headers')) as Record<
            string,
            string
          >)
        : { ...(card.custom_headers ?? {}) };
      const out: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += EMBED_BATCH) {
        const batch = texts
          .slice(i, i + EMBED_BATCH)
          .map((t) => t.slice(0, EMBED_MAX_CHARS) || ' ');
        out.push(
          ...(await embedBatch(http, `${base}/embeddings`, apiKey, headers, card.model, batch)),
        );
      }
      return out;
    },
  };
}

async function embedBatch(
  http: HttpFetch,
  url: string,
  apiKey: string,
  headers: Record<string, string>,
  model: string,
  input: string[],
): Promise<Float32Array[]> {
  let res: Response;
  try {
    res = await http(url, {
      method: 'POST',
      headers: {
        ...headers,
        'content-type': 'application/json',
        authorization: `Bearer ${apiKey}`,
      },
      body: JSON.stringify({ model, input }),
      signal: AbortSignal.timeout(EMBED_TIMEOUT_MS),
    });
  } catch (err) {
    const timedOut = (err as Error).name === 'TimeoutError';
    throw new EmbeddingError(
      timedOut ? 'the embedding endpoint timed out' : 'the embedding endpoint could not be reached',
    );
  }
  if (!res.ok) {
    await res.body?.cancel();
    throw new EmbeddingError(`the embedding endpoint answered HTTP ${res.status}`);
  }
  const body = (await res.json().catch(() => null)) as {
    data?: Array<{ embedding?: unknown; index?: unknown }>;
  } | null;
  const data = body?.data;
  if (!Array.isArray(data) || data.length !== input.length)
    throw new EmbeddingError('the embedding endpoint answered something other than embeddings');
  const ordered = data.every((e) => typeof e.index === 'number')
    ? [...data].sort((a, b) => (a.index as number) - (b.index as number))
    : data;
  return ordered.map((e) => {
    const v = e.embedding;
    if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === 'number'))
      throw new EmbeddingError('the embedding endpoint answered a malformed embedding');
    return Float32Array.from(v as number[]);
  });
}
