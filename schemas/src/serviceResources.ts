import { Type, type Static } from '@sinclair/typebox';
import { Id, Nullable, Obj } from './common.js';

/**
 * Served shapes that had no schema before the OpenAPI document (gateway/src/openapi): files,
 * session outputs, API keys, tenants, the official model resource, health/readiness, and the
 * GraphQL envelopes. Strict like resources.ts, so the document and `test/e2e/api/schemathesis.test.ts`
 * (response conformance) catch a drift between what is served and what is documented.
 */

const Timestamp = Type.String({ format: 'date-time' });

/** `/v1/files` metadata (the SDK's FileMetadata; `scope` when uploaded for a session). */
export const FileObject = Obj({
  type: Type.Literal('file'),
  id: Id('file_'),
  filename: Type.String(),
  mime_type: Type.String(),
  size_bytes: Type.Integer({ minimum: 0 }),
  created_at: Timestamp,
  downloadable: Type.Boolean(),
  expires_at: Nullable(Timestamp),
  scope: Nullable(Obj({ type: Type.Literal('session'), id: Type.String() })),
});
export type FileObject = Static<typeof FileObject>;

/** The multipart upload body of `POST /v1/files`. */
export const FileUploadForm = Obj({
  file: Type.String({
    contentEncoding: 'binary',
    description: 'The file bytes (its part filename becomes the file name).',
  }),
  session_id: Type.Optional(
    Type.String({ description: 'Scope the file to this session (mounted in its sandbox).' }),
  ),
  expires_in_seconds: Type.Optional(
    Type.String({
      pattern: '^\\s*[0-9]+\\s*$',
      description: 'Integer: the file expires after this many seconds.',
    }),
  ),
});

/** A durable session output (a file the sandbox wrote under /mnt/session/outputs). */
export const SessionOutputObject = Obj({
  type: Type.Literal('session_output'),
  filename: Type.String(),
  path: Type.String(),
  size_bytes: Type.Integer({ minimum: 0 }),
  mime_type: Type.String(),
  updated_at: Timestamp,
});
export const SessionOutputList = Obj({
  data: Type.Array(SessionOutputObject),
  has_more: Type.Literal(false),
});

/** An API key as listed: the value itself is shown only once, at creation. */
const ApiKeyFields = {
  id: Id('key_'),
  type: Type.Literal('api_key'),
  name: Type.String(),
  key_prefix: Type.String(),
  environment_id: Nullable(Type.String()),
  created_at: Timestamp,
};
export const ApiKeyObject = Obj(ApiKeyFields);
export const ApiKeyCreated = Obj({
  ...ApiKeyFields,
  key: Type.String({ description: 'The key value; shown only in this answer.' }),
});
export const ApiKeyCreate = Obj({
  name: Type.String({ minLength: 1, maxLength: 256 }),
  environment_id: Type.Optional(Type.String({ minLength: 1 })),
});

export const TenantCreate = Obj({ name: Type.String({ minLength: 1, maxLength: 256 }) });
export const TenantCreated = Obj({
  tenant_id: Type.String(),
  api_key: Type.String(),
  key_id: Type.String(),
});

const Support = Obj({ supported: Type.Boolean() });
/** The SDK's BetaModelCapabilities (projected conservatively: core/src/models/info.ts). */
export const ModelCapabilities = Obj({
  batch: Support,
  citations: Support,
  code_execution: Support,
  compaction: Nullable(Obj({ supported: Type.Boolean(), summarize: Support })),
  context_management: Obj({
    supported: Type.Boolean(),
    clear_thinking_20251015: Nullable(Support),
    clear_tool_uses_20250919: Nullable(Support),
    compact_20260112: Nullable(Support),
  }),
  effort: Obj({
    supported: Type.Boolean(),
    low: Support,
    medium: Support,
    high: Support,
    max: Support,
    xhigh: Nullable(Support),
  }),
  image_input: Support,
  pdf_input: Support,
  server_tools: Obj({ supported: Type.Boolean(), code_execution: Support, web_search: Support }),
  structured_outputs: Support,
  thinking: Obj({
    supported: Type.Boolean(),
    types: Obj({ adaptive: Support, between_tools: Support, disabled: Support, enabled: Support }),
  }),
});

/** The official model resource (BetaModelInfo): the tenant's cards and the vendor fallback's. */
export const ModelObject = Obj({
  type: Type.Literal('model'),
  id: Type.String(),
  display_name: Type.String(),
  created_at: Timestamp,
  lifecycle: Type.Union([
    Type.Literal('active'),
    Type.Literal('deprecated'),
    Type.Literal('retired'),
  ]),
  deprecated_at: Nullable(Timestamp),
  retires_at: Nullable(Timestamp),
  line: Nullable(
    Type.Union(['haiku', 'sonnet', 'opus', 'fable', 'mythos'].map((l) => Type.Literal(l))),
  ),
  max_input_tokens: Nullable(Type.Integer({ minimum: 1 })),
  max_tokens: Nullable(Type.Integer({ minimum: 1 })),
  allowed_fallback_models: Nullable(Type.Array(Type.String())),
  capabilities: Nullable(ModelCapabilities),
});
/** The SDK's ModelListParams (paged in core/src/models/info.ts pageModels). */
export const ModelListQuery = Obj({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
  after_id: Type.Optional(Type.String({ minLength: 1 })),
  before_id: Type.Optional(Type.String({ minLength: 1 })),
  lifecycle: Type.Optional(
    Type.Array(
      Type.Union([Type.Literal('active'), Type.Literal('deprecated'), Type.Literal('retired')]),
    ),
  ),
});
export const ModelList = Obj({
  data: Type.Array(ModelObject),
  has_more: Type.Boolean(),
  first_id: Nullable(Type.String()),
  last_id: Nullable(Type.String()),
});

export const Health = Obj({ ok: Type.Literal(true) });
export const Readiness = Obj({
  ok: Type.Boolean(),
  checks: Obj({ store: Type.Boolean(), bus: Type.Boolean(), coordination: Type.Boolean() }),
});

/**
 * A GraphQL-over-HTTP request (POST body; GET carries the same fields as query parameters).
 * Open: GraphQL over HTTP has servers ignore members they do not know, and Apollo does.
 */
export const GraphQLRequest = Type.Object(
  {
    query: Type.String(),
    operationName: Type.Optional(Nullable(Type.String())),
    variables: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown()))),
    extensions: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown()))),
  },
  { additionalProperties: true },
);
/** A GraphQL response: `data` and/or `errors` (GraphQL errors carry their own `extensions`). */
export const GraphQLResponse = Type.Object(
  {
    data: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown()))),
    errors: Type.Optional(
      Type.Array(Type.Object({ message: Type.String() }, { additionalProperties: true })),
    ),
    extensions: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { additionalProperties: false },
);
