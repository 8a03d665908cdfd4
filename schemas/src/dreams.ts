/**
 * Dreams (SDK 1.12 `client.beta.dreams`): the create body and the list query as the SDKs send
 * them. Checks the schema cannot express (exactly one `memory_store` and one `sessions` input,
 * ids that exist in the tenant, duplicate session ids, the model) are in core/src/dreams/, each a
 * 400 naming the field. Proved by test/e2e/memory/dreams.test.ts and test/e2e/sdk/sdk_suite/test_dreams.py.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Nullable, Obj } from './common.js';

export const DreamInput = Obj({
  type: Type.Union([Type.Literal('memory_store'), Type.Literal('sessions')]),
  memory_store_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  session_ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 256 }))),
});
export type DreamInput = Static<typeof DreamInput>;

export const DreamModel = Type.Union([
  Type.String({ minLength: 1, maxLength: 256 }),
  Obj({
    id: Type.String({ minLength: 1, maxLength: 256 }),
    speed: Type.Optional(Nullable(Type.Union([Type.Literal('standard'), Type.Literal('fast')]))),
  }),
]);

export const DreamOutputBehavior = Obj({
  type: Type.Union([Type.Literal('create_new'), Type.Literal('update_existing')]),
  memory_store_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
});

export const DreamCreate = Obj({
  inputs: Type.Array(DreamInput, { minItems: 1, maxItems: 8 }),
  model: DreamModel,
  instructions: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 4096 }))),
  output_behavior: Type.Optional(DreamOutputBehavior),
});
export type DreamCreate = Static<typeof DreamCreate>;

export const DreamStatus = Type.Union([
  Type.Literal('pending'),
  Type.Literal('running'),
  Type.Literal('completed'),
  Type.Literal('failed'),
  Type.Literal('canceled'),
]);
export type DreamStatus = Static<typeof DreamStatus>;

export const DreamListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
  'created_at[gt]': Type.Optional(Type.String()),
  'created_at[lt]': Type.Optional(Type.String()),
  include_archived: Type.Optional(Type.Boolean()),
  statuses: Type.Optional(Type.Array(DreamStatus, { maxItems: 5 })),
});
export type DreamListQuery = Static<typeof DreamListQuery>;

const DreamUsage = Obj({
  input_tokens: Type.Integer(),
  output_tokens: Type.Integer(),
  cache_creation_input_tokens: Type.Integer(),
  cache_read_input_tokens: Type.Integer(),
});
const StoreRef = Obj({ type: Type.Literal('memory_store'), memory_store_id: Type.String() });

/** The dream as served (SDK `BetaDream`). */
export const Dream = Obj({
  type: Type.Literal('dream'),
  id: Type.String(),
  status: DreamStatus,
  inputs: Type.Array(
    Type.Union([
      StoreRef,
      Obj({ type: Type.Literal('sessions'), session_ids: Type.Array(Type.String()) }),
    ]),
  ),
  model: Obj({ id: Type.String(), speed: Type.Literal('standard') }),
  instructions: Nullable(Type.String()),
  output_behavior: Type.Union([
    Obj({ type: Type.Literal('create_new') }),
    Obj({ type: Type.Literal('update_existing'), memory_store_id: Type.String() }),
  ]),
  outputs: Type.Array(StoreRef),
  error: Nullable(Obj({ type: Type.String(), message: Type.String() })),
  usage: DreamUsage,
  session_id: Type.Null(),
  archived_at: Nullable(Type.String()),
  created_at: Type.String(),
  ended_at: Nullable(Type.String()),
});
