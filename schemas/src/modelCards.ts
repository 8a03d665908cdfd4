import { Type, type Static } from '@sinclair/typebox';
import { Obj } from './common.js';

export const ModelCardCreate = Obj({
  model_id: Type.String({ minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9._:/-]+$' }),
  provider: Type.String({ minLength: 1, maxLength: 64 }),
  model: Type.String({ minLength: 1, maxLength: 256 }),
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
