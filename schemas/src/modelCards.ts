import { Type, type Static } from '@sinclair/typebox';
import { Obj } from './common.js';

export const ModelCardCreate = Obj({
  model_id: Type.String({ minLength: 1, maxLength: 256, pattern: '^[A-Za-z0-9._:/-]+$' }),
  provider: Type.String({ minLength: 1, maxLength: 64 }),
  model: Type.String({ minLength: 1, maxLength: 256 }),
  base_url: Type.Optional(Type.String({ format: 'uri', pattern: '^https?://' })),
  custom_headers: Type.Optional(Type.Record(Type.String({ minLength: 1, pattern: '^[A-Za-z0-9-]+$' }), Type.String(), { maxProperties: 32 })),
  api_key: Type.String({ minLength: 1, maxLength: 4096 }),
  pi_config: Type.Optional(Type.Object({}, { additionalProperties: true })),
});
export type ModelCardCreate = Static<typeof ModelCardCreate>;

// The served shape (ModelCardOut) is a schema in resources.ts.

/** Legacy provider aliases the older create body restricts to. */
export const LEGACY_PROVIDERS = ['ant', 'ant-compatible', 'oai', 'oai-compatible'] as const;
