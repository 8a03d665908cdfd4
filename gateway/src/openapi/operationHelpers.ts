/**
 * The shape of one route's OpenAPI entry (OperationDoc) and the media-type, SSE-frame and id
 * schemas the entries in ./operations.*.ts share. Proven by test/e2e/api/openapi.test.ts.
 */
import { Type, type TObject, type TSchema } from '@sinclair/typebox';
import {
  ChunkEvent,
  Id,
  Session,
  SessionEvent,
  StreamDeltaEvent,
  StreamStartEvent,
} from '@agentfleet/schemas';

/**
 * What the OpenAPI document says about each route, keyed `METHOD /fastify/path` exactly as the
 * route table records it. Auth, the beta header and the error responses are not repeated here:
 * the document derives them from the route's config (public/operator/beta) and from this entry
 * (a body adds 413; `conflict` adds 409).
 *
 * A route registered without an entry here, or an entry for a route that no longer exists,
 * fails test/e2e/api/openapi.test.ts with the key to add or remove.
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

export const json = (schema: TSchema) => ({ 'application/json': schema });
/** One SSE frame (OpenAPI 3.1: the media type's schema describes each event), its `data` JSON of `data`'s schema. */
export const sseFrames = (data: TSchema | null, description: string) => ({
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
export const SSE = sseFrames(
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
export const GQL_SSE = sseFrames(
  null,
  'graphql-sse frames: `next` (a GraphQL result as JSON) and `complete`.',
);
export const BYTES = { '*/*': null };

export const AgentId = Id('agent_');
export const EnvId = Id('env_');
export const SessId = Id('sess_');
export const FileId = Id('file_');
export const ThreadId = Type.String({ pattern: '^sthr_', description: 'A session thread id' });
export const CardId = Id('mc_');
export const KeyId = Id('key_');
export const userMessage = {
  events: [{ type: 'user.message', content: [{ type: 'text', text: 'Hello' }] }],
};
