import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import {
  Agent,
  AgentCreate,
  AgentListQuery,
  AgentRetrieveQuery,
  AgentUpdate,
  ApiKeyCreate,
  ChunkEvent,
  ApiKeyCreated,
  ApiKeyObject,
  Deleted,
  Environment,
  EnvironmentCreate,
  EnvironmentListQuery,
  EnvironmentUpdate,
  EventListQuery,
  FileObject,
  FileUploadForm,
  FullList,
  GraphQLRequest,
  GraphQLResponse,
  Health,
  Id,
  ListPage,
  MessagesBody,
  ModelCardCreate,
  ModelCardCreated,
  ModelCardOut,
  ModelList,
  ModelObject,
  Readiness,
  SendEventsBody,
  Session,
  SessionCreate,
  SessionEvent,
  SessionListQuery,
  SessionOutputList,
  SessionUpdate,
  StreamDeltaEvent,
  StreamQuery,
  StreamStartEvent,
  TenantCreate,
  TenantCreated,
  VersionListQuery,
} from '@agentfleet/schemas';

/**
 * What the OpenAPI document says about each route, keyed `METHOD /fastify/path` exactly as the
 * route table records it. Auth, the beta header and the error responses are not repeated here:
 * the document derives them from the route's config (public/operator/beta) and from this entry
 * (a body adds 413; `conflict` adds 409).
 *
 * A route registered without an entry here, or an entry for a route that no longer exists,
 * fails test/openapi.test.ts with the key to add or remove.
 */
export interface OperationDoc {
  operationId: string;
  summary: string;
  tag: string;
  /** Path parameters by name (ids carry their prefix as a pattern, e.g. `^agent_`). */
  params?: Record<string, TSchema>;
  /** Query parameters: each property is one parameter. */
  query?: TObject;
  /** JSON request body; `example` is a valid body (used by the tenancy test and Schemathesis). */
  body?: { schema: TSchema; required?: boolean; example: unknown };
  /** multipart/form-data request body. */
  multipart?: TSchema;
  /** The success answer: status (200 by default) and content by media type (`null`: no schema). */
  ok: { status?: number; description: string; content: Record<string, TSchema | null> };
  /** More documented answers beyond the derived error set (e.g. 503 from /readyz). */
  more?: Record<number, { description: string; content: Record<string, TSchema | null> }>;
  /** The operation can answer 409 conflict. */
  conflict?: boolean;
  /** Error answers are GraphQL responses as well as the error body. */
  graphql?: boolean;
  description?: string;
}

const json = (schema: TSchema) => ({ 'application/json': schema });
/** One SSE frame (OpenAPI 3.1: the media type's schema describes each event), its `data` JSON of `data`'s schema. */
const sseFrames = (data: TSchema | null, description: string) => ({
  'text/event-stream': Type.Object(
    {
      event: Type.String(),
      id: Type.Optional(Type.String()),
      retry: Type.Optional(Type.Integer()),
      data: data
        ? Type.String({ contentMediaType: 'application/json', contentSchema: data })
        : Type.String(),
    },
    { description },
  ),
});
/** Session streams: persisted events (`id: <seq>`), live chunks, the SDK's preview frames, and pings (`{}`). */
const SSE = sseFrames(
  Type.Union([
    SessionEvent,
    ChunkEvent,
    StreamStartEvent,
    StreamDeltaEvent,
    Type.Object({}, { additionalProperties: false }),
  ]),
  'Server-sent events: one frame per event, named by its type; persisted events carry `id: <seq>`; `ping` frames carry `{}`.',
);
/** graphql-sse frames (`next` carries a GraphQL result, `complete` nothing). */
const GQL_SSE = sseFrames(
  null,
  'graphql-sse frames: `next` (a GraphQL result as JSON) and `complete`.',
);
const BYTES = { '*/*': null };

const AgentId = Id('agent_');
const EnvId = Id('env_');
const SessId = Id('sess_');
const FileId = Id('file_');
const CardId = Id('mc_');
const KeyId = Id('key_');
const userMessage = {
  events: [{ type: 'user.message', content: [{ type: 'text', text: 'Hello' }] }],
};

const ops: Record<string, OperationDoc> = {
  // ---- ops and meta
  'GET /healthz': {
    operationId: 'health',
    summary: 'Liveness',
    tag: 'ops',
    ok: { description: 'The process is up.', content: json(Health) },
  },
  'GET /readyz': {
    operationId: 'readiness',
    summary: 'Readiness: store, bus and coordination reachable',
    tag: 'ops',
    ok: { description: 'Every dependency answers.', content: json(Readiness) },
    more: { 503: { description: 'A dependency does not answer.', content: json(Readiness) } },
  },
  'GET /metrics': {
    operationId: 'metrics',
    summary: 'Prometheus metrics',
    tag: 'ops',
    ok: {
      description: 'Prometheus text exposition format.',
      content: { 'text/plain': Type.String() },
    },
  },
  'GET /v1/openapi.json': {
    operationId: 'openapi',
    summary: 'This OpenAPI 3.1 document',
    tag: 'meta',
    ok: {
      description: 'The document.',
      content: json(Type.Object({ openapi: Type.String() }, { additionalProperties: true })),
    },
  },

  // ---- agents
  'POST /v1/agents': {
    operationId: 'createAgent',
    summary: 'Create an agent',
    tag: 'agents',
    body: {
      schema: AgentCreate,
      required: true,
      example: { name: 'Researcher', model: 'claude-sonnet-4-5' },
    },
    ok: { description: 'The agent (version 1).', content: json(Agent) },
  },
  'GET /v1/agents': {
    operationId: 'listAgents',
    summary: 'List agents',
    tag: 'agents',
    query: AgentListQuery,
    ok: { description: 'A page of agents.', content: json(ListPage(Agent)) },
  },
  'GET /v1/agents/:id': {
    operationId: 'getAgent',
    summary: 'Retrieve an agent (latest or `?version=`)',
    tag: 'agents',
    params: { id: AgentId },
    query: AgentRetrieveQuery,
    ok: { description: 'The agent.', content: json(Agent) },
  },
  'GET /v1/agents/:id/versions': {
    operationId: 'listAgentVersions',
    summary: "List an agent's versions",
    tag: 'agents',
    params: { id: AgentId },
    query: VersionListQuery,
    ok: { description: 'A page of versions.', content: json(ListPage(Agent)) },
  },
  'GET /v1/agents/:id/versions/:version': {
    operationId: 'getAgentVersion',
    summary: 'Retrieve one version of an agent',
    tag: 'agents',
    params: { id: AgentId, version: Type.Integer({ minimum: 1 }) },
    ok: { description: 'The agent at that version.', content: json(Agent) },
  },
  'PATCH /v1/agents/:id': {
    operationId: 'updateAgent',
    summary: 'Update an agent (a new version)',
    tag: 'agents',
    params: { id: AgentId },
    body: { schema: AgentUpdate, required: true, example: { name: 'Renamed' } },
    ok: { description: 'The agent.', content: json(Agent) },
    conflict: true,
  },
  'POST /v1/agents/:id': {
    operationId: 'updateAgentPost',
    summary: 'Update an agent (the SDK sends POST)',
    tag: 'agents',
    params: { id: AgentId },
    body: { schema: AgentUpdate, required: true, example: { name: 'Renamed' } },
    ok: { description: 'The agent.', content: json(Agent) },
    conflict: true,
  },
  'DELETE /v1/agents/:id': {
    operationId: 'deleteAgent',
    summary: 'Archive an agent',
    tag: 'agents',
    params: { id: AgentId },
    ok: { description: 'The archived agent.', content: json(Agent) },
  },
  'POST /v1/agents/:id/archive': {
    operationId: 'archiveAgent',
    summary: 'Archive an agent',
    tag: 'agents',
    params: { id: AgentId },
    ok: { description: 'The archived agent.', content: json(Agent) },
  },

  // ---- environments
  'POST /v1/environments': {
    operationId: 'createEnvironment',
    summary: 'Create an environment',
    tag: 'environments',
    body: { schema: EnvironmentCreate, required: true, example: { name: 'python' } },
    ok: { description: 'The environment.', content: json(Environment) },
  },
  'GET /v1/environments': {
    operationId: 'listEnvironments',
    summary: 'List environments',
    tag: 'environments',
    query: EnvironmentListQuery,
    ok: { description: 'A page of environments.', content: json(ListPage(Environment)) },
  },
  'GET /v1/environments/:id': {
    operationId: 'getEnvironment',
    summary: 'Retrieve an environment',
    tag: 'environments',
    params: { id: EnvId },
    ok: { description: 'The environment.', content: json(Environment) },
  },
  'PATCH /v1/environments/:id': {
    operationId: 'updateEnvironment',
    summary: 'Update an environment',
    tag: 'environments',
    params: { id: EnvId },
    body: { schema: EnvironmentUpdate, required: true, example: { name: 'renamed' } },
    ok: { description: 'The environment.', content: json(Environment) },
  },
  'POST /v1/environments/:id': {
    operationId: 'updateEnvironmentPost',
    summary: 'Update an environment (the SDK sends POST)',
    tag: 'environments',
    params: { id: EnvId },
    body: { schema: EnvironmentUpdate, required: true, example: { name: 'renamed' } },
    ok: { description: 'The environment.', content: json(Environment) },
  },
  'DELETE /v1/environments/:id': {
    operationId: 'deleteEnvironment',
    summary: 'Delete an environment (409 while agents reference it)',
    tag: 'environments',
    params: { id: EnvId },
    ok: { description: 'Deleted.', content: json(Deleted('environment_deleted')) },
    conflict: true,
  },
  'POST /v1/environments/:id/archive': {
    operationId: 'archiveEnvironment',
    summary: 'Archive an environment',
    tag: 'environments',
    params: { id: EnvId },
    ok: { description: 'The archived environment.', content: json(Environment) },
  },

  // ---- sessions
  'POST /v1/sessions': {
    operationId: 'createSession',
    summary: 'Create a session',
    tag: 'sessions',
    body: {
      schema: SessionCreate,
      required: true,
      example: { agent: 'agent_01example', environment_id: 'env_01example' },
    },
    ok: { description: 'The session.', content: json(Session) },
  },
  'GET /v1/sessions': {
    operationId: 'listSessions',
    summary: 'List sessions',
    tag: 'sessions',
    query: SessionListQuery,
    ok: { description: 'A page of sessions.', content: json(ListPage(Session)) },
  },
  'GET /v1/sessions/:id': {
    operationId: 'getSession',
    summary: 'Retrieve a session',
    tag: 'sessions',
    params: { id: SessId },
    ok: { description: 'The session.', content: json(Session) },
  },
  'POST /v1/sessions/:id': {
    operationId: 'updateSessionPost',
    summary: 'Update a session (the SDK sends POST)',
    tag: 'sessions',
    params: { id: SessId },
    body: { schema: SessionUpdate, example: { title: 'Renamed' } },
    ok: { description: 'The session.', content: json(Session) },
  },
  'PATCH /v1/sessions/:id': {
    operationId: 'updateSession',
    summary: 'Update a session',
    tag: 'sessions',
    params: { id: SessId },
    body: { schema: SessionUpdate, example: { title: 'Renamed' } },
    ok: { description: 'The session.', content: json(Session) },
  },
  'DELETE /v1/sessions/:id': {
    operationId: 'deleteSession',
    summary: 'Delete a session (terminates it)',
    tag: 'sessions',
    params: { id: SessId },
    ok: { description: 'Deleted.', content: json(Deleted('session_deleted')) },
  },
  'POST /v1/sessions/:id/archive': {
    operationId: 'archiveSession',
    summary: 'Archive a session',
    tag: 'sessions',
    params: { id: SessId },
    ok: { description: 'The archived session.', content: json(Session) },
  },
  'POST /v1/sessions/:id/cancel': {
    operationId: 'cancelSession',
    summary: "Cancel the session's running turn",
    tag: 'sessions',
    params: { id: SessId },
    ok: { description: 'The session.', content: json(Session) },
  },
  'POST /v1/sessions/:id/events': {
    operationId: 'sendEvents',
    summary: 'Send user events',
    tag: 'events',
    params: { id: SessId },
    body: { schema: SendEventsBody, required: true, example: userMessage },
    ok: {
      status: 202,
      description: 'The appended events.',
      content: json(
        Type.Object({ data: Type.Array(SessionEvent) }, { additionalProperties: false }),
      ),
    },
  },
  'GET /v1/sessions/:id/events': {
    operationId: 'listEvents',
    summary: 'List persisted events (or stream them with `Accept: text/event-stream`)',
    tag: 'events',
    params: { id: SessId },
    query: EventListQuery,
    ok: {
      description: 'A page of events; an event stream when the request accepts text/event-stream.',
      content: { ...json(ListPage(SessionEvent)), ...SSE },
    },
  },
  'GET /v1/sessions/:id/events/stream': {
    operationId: 'streamEvents',
    summary: 'Stream events (SSE; `Last-Event-ID` resumes)',
    tag: 'events',
    params: { id: SessId },
    query: StreamQuery,
    ok: { description: 'An event stream (never ends on its own).', content: SSE },
  },
  'GET /v1/sessions/:id/log': {
    operationId: 'sessionLog',
    summary: 'The whole persisted event log',
    tag: 'events',
    params: { id: SessId },
    ok: {
      description: 'Every persisted event, in seq order.',
      content: json(Type.Array(SessionEvent)),
    },
  },
  'POST /v1/sessions/:id/messages': {
    operationId: 'sendMessage',
    summary: 'Send one user message and stream its turn (SSE, ends at idle)',
    tag: 'events',
    params: { id: SessId },
    body: { schema: MessagesBody, required: true, example: { content: 'Hello' } },
    ok: { description: "The turn's event stream, chunks included.", content: SSE },
  },

  // ---- files and outputs
  'POST /v1/files': {
    operationId: 'uploadFile',
    summary: 'Upload a file (multipart/form-data)',
    tag: 'files',
    multipart: FileUploadForm,
    ok: { description: 'The file metadata.', content: json(FileObject) },
  },
  'GET /v1/files': {
    operationId: 'listFiles',
    summary: 'List files (newest first)',
    tag: 'files',
    query: Type.Object(
      {
        limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000 })),
        page: Type.Optional(Type.String()),
        cursor: Type.Optional(Type.String()),
        scope_id: Type.Optional(Type.String()),
        ids: Type.Optional(Type.Array(Type.String(), { maxItems: 100 })),
      },
      { additionalProperties: false },
    ),
    ok: { description: 'A page of files.', content: json(ListPage(FileObject)) },
  },
  'GET /v1/files/:id': {
    operationId: 'getFile',
    summary: 'File metadata (`Accept: application/json`) or its bytes',
    tag: 'files',
    params: { id: FileId },
    ok: {
      description:
        'The metadata as JSON when the request accepts application/json; otherwise the bytes.',
      content: { ...json(FileObject), ...BYTES },
    },
  },
  'GET /v1/files/:id/content': {
    operationId: 'downloadFile',
    summary: "A file's bytes",
    tag: 'files',
    params: { id: FileId },
    ok: { description: 'The bytes, with the content type given at upload.', content: BYTES },
  },
  'DELETE /v1/files/:id': {
    operationId: 'deleteFile',
    summary: 'Delete a file',
    tag: 'files',
    params: { id: FileId },
    ok: { description: 'Deleted.', content: json(Deleted('file_deleted')) },
  },
  'GET /v1/sessions/:id/outputs': {
    operationId: 'listOutputs',
    summary: "List a session's durable outputs",
    tag: 'outputs',
    params: { id: SessId },
    ok: { description: 'Every output.', content: json(SessionOutputList) },
  },
  'GET /v1/sessions/:id/outputs/:filename': {
    operationId: 'downloadOutput',
    summary: "An output's bytes",
    tag: 'outputs',
    params: { id: SessId, filename: Type.String({ minLength: 1 }) },
    ok: { description: 'The bytes.', content: BYTES },
  },
  'GET /v1/sessions/:id/outputs/*': {
    operationId: 'nestedOutputPath',
    summary: 'Nested output paths are refused',
    tag: 'outputs',
    params: {
      id: SessId,
      filename: Type.String({ minLength: 1 }),
      nested_path: Type.String({ minLength: 1 }),
    },
    description:
      'Outputs are single path segments: any nested path answers 400 naming `filename` (404 for an unknown or foreign session).',
    ok: { status: 400, description: 'Always refused.', content: {} },
  },

  // ---- the tenant's models
  'GET /v1/models': {
    operationId: 'listModels',
    summary: "The tenant's models (one per active model card)",
    tag: 'models',
    ok: { description: 'Every model.', content: json(ModelList) },
  },
  'GET /v1/models/:id': {
    operationId: 'getModel',
    summary: 'One model by its model card handle',
    tag: 'models',
    params: { id: Type.String({ minLength: 1 }) },
    ok: { description: 'The model.', content: json(ModelObject) },
  },

  // ---- operator
  'POST /v1/svc/tenants': {
    operationId: 'createTenant',
    summary: 'Create a tenant and its first API key (operator key only)',
    tag: 'tenants',
    body: { schema: TenantCreate, required: true, example: { name: 'acme' } },
    ok: {
      description: 'The tenant id and its first key (shown once).',
      content: json(TenantCreated),
    },
  },
};

// Model cards and API keys are served under /v1/svc and un-prefixed under /v1.
for (const [base, suffix] of [
  ['/v1/svc', 'Svc'],
  ['/v1', ''],
] as const) {
  Object.assign(ops, {
    [`GET ${base}/model_cards`]: {
      operationId: `listModelCards${suffix}`,
      summary: "List the tenant's model cards",
      tag: 'model_cards',
      ok: { description: 'Every card (keys never served).', content: json(FullList(ModelCardOut)) },
    },
    [`POST ${base}/model_cards`]: {
      operationId: `createModelCard${suffix}`,
      summary: 'Create a model card (probes the provider with the key)',
      tag: 'model_cards',
      body: {
        schema: ModelCardCreate,
        required: true,
        example: {
          model_id: 'my-model',
          provider: 'anthropic',
          model: 'claude-sonnet-4-5',
          api_key: 'sk-example',
        },
      },
      ok: { description: 'The card and the probe outcome.', content: json(ModelCardCreated) },
      conflict: true,
    },
    [`POST ${base}/model_cards/:id`]: {
      operationId: `rotateModelCard${suffix}`,
      summary: 'Update a model card (rotate its key)',
      tag: 'model_cards',
      params: { id: CardId },
      body: {
        schema: Type.Partial(ModelCardCreate, { additionalProperties: false }),
        required: true,
        example: { api_key: 'sk-rotated' },
      },
      ok: { description: 'The card.', content: json(ModelCardOut) },
    },
    [`DELETE ${base}/model_cards/:id`]: {
      operationId: `deleteModelCard${suffix}`,
      summary: 'Delete a model card',
      tag: 'model_cards',
      params: { id: CardId },
      ok: { description: 'Deleted.', content: json(Deleted('model_card_deleted')) },
    },
    [`GET ${base}/api_keys`]: {
      operationId: `listApiKeys${suffix}`,
      summary: "List the tenant's API keys",
      tag: 'api_keys',
      ok: {
        description: 'Every active key (values never served).',
        content: json(FullList(ApiKeyObject)),
      },
    },
    [`POST ${base}/api_keys`]: {
      operationId: `createApiKey${suffix}`,
      summary: 'Create an API key (optionally an environment service key)',
      tag: 'api_keys',
      body: { schema: ApiKeyCreate, required: true, example: { name: 'ci' } },
      ok: { description: 'The key, its value shown once.', content: json(ApiKeyCreated) },
    },
    [`DELETE ${base}/api_keys/:id`]: {
      operationId: `revokeApiKey${suffix}`,
      summary: 'Revoke an API key (refused at once)',
      tag: 'api_keys',
      params: { id: KeyId },
      ok: { description: 'Revoked.', content: json(Deleted('api_key_deleted')) },
    },
  } satisfies Record<string, OperationDoc>);
}

// GraphQL over HTTP (Apollo) and graphql-sse (subscriptions) share the REST auth and rate limit.
const gqlQuery = Type.Object(
  {
    query: Type.Optional(Type.String()),
    operationName: Type.Optional(Type.String()),
    variables: Type.Optional(Type.String({ description: 'JSON text' })),
  },
  { additionalProperties: true },
);
const gqlBody = { schema: GraphQLRequest, required: true, example: { query: '{ __typename }' } };
const gqlAnswer = {
  description: 'A GraphQL response, or an event stream for graphql-sse requests.',
  content: { ...json(GraphQLResponse), ...GQL_SSE },
};
const sseOnly = {
  description:
    'graphql-sse: a stream token (PUT), the accepted operation (POST with a token) or the stream.',
  content: { ...GQL_SSE, 'text/plain': Type.String(), ...json(GraphQLResponse) },
};
Object.assign(ops, {
  'GET /graphql': {
    operationId: 'graphqlGet',
    summary: 'GraphQL query over GET',
    tag: 'graphql',
    query: gqlQuery,
    ok: gqlAnswer,
    graphql: true,
  },
  'POST /graphql': {
    operationId: 'graphqlPost',
    summary: 'GraphQL queries and mutations (subscriptions with Accept: text/event-stream)',
    tag: 'graphql',
    body: gqlBody,
    ok: gqlAnswer,
    graphql: true,
  },
  'PUT /graphql': {
    operationId: 'graphqlSsePut',
    summary: 'graphql-sse single-connection mode: reserve a stream',
    tag: 'graphql',
    ok: { ...sseOnly, status: 201 },
    graphql: true,
  },
  'DELETE /graphql': {
    operationId: 'graphqlSseDelete',
    summary: 'graphql-sse single-connection mode: stop an operation',
    tag: 'graphql',
    ok: sseOnly,
    graphql: true,
  },
  'GET /graphql/stream': {
    operationId: 'graphqlStreamGet',
    summary: 'graphql-sse subscriptions (GET)',
    tag: 'graphql',
    query: gqlQuery,
    ok: sseOnly,
    graphql: true,
  },
  'POST /graphql/stream': {
    operationId: 'graphqlStreamPost',
    summary: 'graphql-sse subscriptions',
    tag: 'graphql',
    body: gqlBody,
    ok: sseOnly,
    graphql: true,
  },
  'PUT /graphql/stream': {
    operationId: 'graphqlStreamPut',
    summary: 'graphql-sse single-connection mode: reserve a stream',
    tag: 'graphql',
    ok: { ...sseOnly, status: 201 },
    graphql: true,
  },
  'DELETE /graphql/stream': {
    operationId: 'graphqlStreamDelete',
    summary: 'graphql-sse single-connection mode: stop an operation',
    tag: 'graphql',
    ok: sseOnly,
    graphql: true,
  },
} satisfies Record<string, OperationDoc>);

export const OPERATIONS: Readonly<Record<string, OperationDoc>> = ops;
export const operationKey = (method: string, url: string) => `${method} ${url}`;
