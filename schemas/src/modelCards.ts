import { Type, type Static } from '@sinclair/typebox';
import { Obj } from './common.js';

export const ModelCardCreate = Obj({
  model_id: Type.String({ minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9._:/-]+$' }),
  provider: Type.String({ minLength: 1, maxLength: 64 }),
  /**
   * The wire model. Omitting it is the older create body (the wire model is the model_id),
   * which restricts provider to LEGACY_PROVIDERS (spec "Models and model cards" rule 3).
   */
  model: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  base_url: Type.Optional(Type.String({ format: 'uri', pattern: '^https?://' })),
  /**
   * Extra headers sent to the provider. Stored sealed like the key; served with every value
   * replaced by CUSTOM_HEADER_MASK. On update, a value equal to the mask keeps the stored one.
   */
  custom_headers: Type.Optional(
    Type.Record(
      Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9-]+$' }),
      Type.String({ maxLength: 8192, pattern: '^[\\t\\x20-\\x7e\\x80-\\xff]*$' }),
      { maxProperties: 32, additionalProperties: false },
    ),
  ),
  api_key: Type.String({ minLength: 1, maxLength: 4096 }),
  pi_config: Type.Optional(Type.Object({}, { additionalProperties: true })),
});
export type ModelCardCreate = Static<typeof ModelCardCreate>;

/** What a model card serves in place of each custom header value (the values are sealed). */
export const CUSTOM_HEADER_MASK = '****';

// The served shape (ModelCardOut) is a schema in resources.ts.

/** Legacy provider aliases the older create body restricts to. */
export const LEGACY_PROVIDERS = ['ant', 'ant-compatible', 'oai', 'oai-compatible'] as const;

/**
 * `POST /v1/svc/models/list`: the runtime catalog of `provider`. `api_key` (deprecated) asks for
 * live discovery instead, for the two legacy protocols only; `base_url` points that discovery
 * at a compatible endpoint (under the egress policy like a card's base_url).
 */
export const ModelsListRequest = Obj({
  provider: Type.String({ minLength: 1, maxLength: 64 }),
  api_key: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
  base_url: Type.Optional(Type.String({ format: 'uri', pattern: '^https?://' })),
});
export type ModelsListRequest = Static<typeof ModelsListRequest>;

/** One entry of `POST /v1/svc/models/list`. */
export const CatalogModelOut = Obj({
  type: Type.Literal('model'),
  id: Type.String(),
  display_name: Type.String(),
  provider: Type.String(),
  /** Valid as a card's pi_config as it stands. */
  pi_config: Type.Object({}, { additionalProperties: true }),
});
export type CatalogModelOut = Static<typeof CatalogModelOut>;

/** `GET /v1/svc/model_cards/:id/key` (agent workers only): the cleartext key. */
export const ModelCardKey = Obj({
  id: Type.String(),
  type: Type.Literal('model_card_key'),
  tenant_id: Type.String(),
  api_key: Type.String(),
});
export type ModelCardKey = Static<typeof ModelCardKey>;
