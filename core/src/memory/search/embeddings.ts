/**
 * Embedding models for memory search: which model embeds a store, and the client of its
 * OpenAI-compatible `POST {base_url}/embeddings` ({model, input: string[]} →
 * {data: [{embedding: number[], index}]}).
 *
 * Which model (decided here, documented in the README):
 * - A model card is an embedding model when its `pi_config.embedding` is `true` (a descriptive
 *   pi_config key, kept as sent by the card validation) and it speaks the OpenAI protocol
 *   (provider openai, oai, oai-compatible, openai-compatible, or pi_config.api openai-*). Its
 *   `model` is the wire model, its `base_url` (default https://api.openai.com/v1) the endpoint,
 *   its sealed api_key the bearer and its sealed custom headers go along.
 * - A store's `embedding_model` names such a card (model_id, or card id) in the store's tenant. A store
 *   without one uses the platform default MEMORY_EMBEDDING_MODEL, looked up in the store's
 *   tenant first, else among the operator's cards (tnt_default). Neither → lexical search.
 * - A named card that is missing or not an embedding model is a 400 naming `embedding_model`.
 *
 * Egress: a card of a tenant other than the operator's reaches its base_url through the
 * platform's egress policy (private addresses refused unless EGRESS_ALLOW_PRIVATE_HOSTS opens
 * them), like model turns; the operator's cards are operator configuration. A failing endpoint
 * is an EmbeddingError (message without the key); callers decide (writes log and retry lazily,
 * search falls back to lexical and says so). Proved by test/memory-search.test.ts.
 */
import type { SecretBox } from '../../crypto.js';
import type { Collections, ModelCardDoc } from '../../domain/collections.js';
import { DEFAULT_TENANT } from '../../domain/auth.js';
import { providerProtocol } from '../../adapters/modelProviders.js';
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

/** Resolves the embedding model of a store; null = none configured (lexical search). */
export async function resolveEmbeddingModel(
  d: EmbeddingDeps,
  tenant: string,
  storeModel: string | null | undefined,
): Promise<EmbeddingModel | null> {
  const named = storeModel || null;
  const name = named ?? d.platformDefault;
  if (!name) return null;
  // By model_id (a card's name), or by the card's id.
  const which = { $or: [{ model_id: name }, { _id: name }] };
  let card = await d.c.modelCards.findOne(tenant, which);
  if (!card && !named && tenant !== DEFAULT_TENANT)
    card = await d.c.modelCards.findOne(DEFAULT_TENANT, which);
  const field = 'embedding_model';
  const source = named ? "the store's embedding_model" : 'the platform default';
  if (!card) throw invalid(field, `no model card '${name}' (${source})`);
  if (!isEmbeddingCard(card))
    throw invalid(
      field,
      `model card '${name}' (${source}) is not an embedding model: it needs pi_config.embedding = true and an OpenAI-compatible provider`,
    );
  return cardModel(d, card);
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
