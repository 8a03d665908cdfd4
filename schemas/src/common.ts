import { Type, type Static, type TSchema } from '@sinclair/typebox';

export const BETA_VERSION = 'managed-agents-2026-04-01';
export const TOOLSET_TYPE = 'agent_toolset_20260401';

/** Strict object: unknown fields are rejected at the edge with the field's name. */
export const Obj = <T extends Record<string, TSchema>>(
  props: T,
  opts: { description?: string } = {},
) => Type.Object(props, { additionalProperties: false, ...opts });

export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);

/** The SDK's budget: a list-cost cap. */
export const BudgetLimit = Obj({
  type: Type.Literal('limit'),
  max_list_cost: Obj({
    amount: Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$' }),
    currency: Type.String({ minLength: 3, maxLength: 3 }),
  }),
});

// propertyNames: TypeBox maps a plain string key to `^(.*)$`, dropping the key's maxLength.
export const Metadata = Type.Record(
  Type.String({ maxLength: 64 }),
  Type.String({ maxLength: 512 }),
  {
    maxProperties: 16,
    propertyNames: { maxLength: 64 },
  },
);
/** Metadata patch: a null value removes the key. */
export const MetadataPatch = Type.Record(
  Type.String({ maxLength: 64 }),
  Nullable(Type.String({ maxLength: 512 })),
  {
    maxProperties: 16,
    propertyNames: { maxLength: 64 },
  },
);

export const Id = (prefix: string) =>
  Type.String({ minLength: prefix.length + 1, maxLength: 128, pattern: `^${prefix}` });

export const TextBlock = Obj({
  type: Type.Literal('text'),
  text: Type.String({ maxLength: 1_000_000 }),
});
const ImageSource = Type.Union([
  Obj({ type: Type.Literal('base64'), media_type: Type.String(), data: Type.String() }),
  Obj({ type: Type.Literal('url'), url: Type.String({ format: 'uri' }) }),
  Obj({ type: Type.Literal('file'), file_id: Type.String() }),
]);
export const ImageBlock = Obj({ type: Type.Literal('image'), source: ImageSource });
export const DocumentBlock = Type.Object(
  {
    type: Type.Literal('document'),
    // The SDK's document sources.
    source: Type.Union([
      Obj({
        type: Type.Literal('base64'),
        media_type: Type.String({ minLength: 1 }),
        data: Type.String(),
      }),
      Obj({
        type: Type.Literal('text'),
        media_type: Type.Literal('text/plain'),
        data: Type.String(),
      }),
      Obj({ type: Type.Literal('url'), url: Type.String({ format: 'uri' }) }),
      Obj({ type: Type.Literal('file'), file_id: Type.String({ minLength: 1 }) }),
    ]),
    title: Type.Optional(Nullable(Type.String())),
    context: Type.Optional(Nullable(Type.String())),
  },
  { additionalProperties: false },
);
/** SDK BetaManagedAgentsSearchResultBlock (a tool result block, e.g. from a self-hosted worker). */
export const SearchResultBlock = Obj({
  type: Type.Literal('search_result'),
  source: Type.String({ maxLength: 10_000 }),
  title: Type.String({ maxLength: 10_000 }),
  content: Type.Array(TextBlock, { maxItems: 100 }),
  citations: Obj({ enabled: Type.Boolean() }),
});
export const RedactedBlock = Obj({ type: Type.Literal('redacted') });
export const ContentBlock = Type.Union([TextBlock, ImageBlock, DocumentBlock, RedactedBlock]);
export type ContentBlock = Static<typeof ContentBlock>;

export const ListQueryBase = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  cursor: Type.Optional(Type.String({ maxLength: 512 })),
  page: Type.Optional(Type.String({ maxLength: 512 })),
};

// The list envelope (ListPage) is a schema in resources.ts.
