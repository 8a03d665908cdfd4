import type { TSchema } from '@sinclair/typebox';
import {
  Agent,
  AgentCreate,
  AgentUpdate,
  BETA_VERSION,
  ChunkEvent,
  Environment,
  EnvironmentCreate,
  EnvironmentUpdate,
  ErrorBody,
  FileObject,
  GraphQLResponse,
  ModelCardCreate,
  ModelCardCreated,
  ModelCardOut,
  Session,
  SessionCreate,
  SessionEvent,
  SessionUpdate,
} from '@agentfleet/schemas';
import { OPERATIONS, operationKey, type OperationDoc } from './operations.js';
import { openApiPath, type RouteEntry } from './routeTable.js';

/**
 * The OpenAPI 3.1 document of the HTTP surface, built from the route table and the TypeBox
 * schemas the server validates with (OpenAPI 3.1 is JSON Schema 2020-12, which TypeBox emits:
 * the schemas embed as they are, minus TypeBox's symbol keys). Guarantees:
 * - every recorded route is an operation, and only recorded routes are (`undocumented` and
 *   `stale` name the differences: test/e2e/api/openapi.test.ts fails on either);
 * - auth comes from the route config: public routes have no security, the others take
 *   `x-api-key` or `Authorization: Bearer` and document 401/403/429; `beta` routes require the
 *   `anthropic-beta` header; operator-only routes say so;
 * - every error status is documented with the error body (`{type: 'error', error, request_id}`).
 *
 * Proven by: test/e2e/api/openapi.test.ts, test/e2e/api/schemathesis.test.ts (the server conforms to it).
 */

/** Schemas shared by many operations, served once under components.schemas. */
const NAMED: Array<[string, TSchema]> = [
  ['ErrorBody', ErrorBody],
  ['Agent', Agent],
  ['AgentCreate', AgentCreate],
  ['AgentUpdate', AgentUpdate],
  ['Environment', Environment],
  ['EnvironmentCreate', EnvironmentCreate],
  ['EnvironmentUpdate', EnvironmentUpdate],
  ['Session', Session],
  ['SessionCreate', SessionCreate],
  ['SessionUpdate', SessionUpdate],
  ['SessionEvent', SessionEvent],
  ['ChunkEvent', ChunkEvent],
  ['ModelCardCreate', ModelCardCreate],
  ['ModelCardOut', ModelCardOut],
  ['ModelCardCreated', ModelCardCreated],
  ['FileObject', FileObject],
  ['GraphQLResponse', GraphQLResponse],
];

const ERROR_TEXT: Record<number, string> = {
  400: 'Invalid request: the message names the field (`error.type` invalid_request).',
  401: 'Missing or invalid API key (unauthorized).',
  403: 'The key may not use this operation (forbidden).',
  404: 'Not found, including any id of another tenant (not_found).',
  409: 'Conflict with the current state (conflict).',
  412: 'A Work heartbeat from a replaced claim or with a stale expected_last_heartbeat (precondition_failed, error_code heartbeat_precondition_failed).',
  413: 'Request body over the size limit (invalid_request).',
  429: "Over the tenant's rate limit (rate_limited; see retry-after).",
};

type Json = Record<string, unknown>;

/** A JSON copy of a TypeBox schema, with shared schemas replaced by `$ref`s. */
function converter(named: Map<TSchema, string>) {
  const convert = (node: unknown, root: boolean): unknown => {
    if (Array.isArray(node)) return node.map((n) => convert(n, false));
    if (node === null || typeof node !== 'object') return node;
    const name = named.get(node as TSchema);
    if (name && !root) return { $ref: `#/components/schemas/${name}` };
    const out: Json = {};
    // Object.keys skips TypeBox's symbol keys ([Kind], [OptionalKind], …).
    for (const k of Object.keys(node)) out[k] = convert((node as Json)[k], false);
    return out;
  };
  return (schema: TSchema, root = false) => convert(schema, root) as Json;
}

function content(map: Record<string, TSchema | null>, schema: (s: TSchema) => Json): Json {
  return Object.fromEntries(
    Object.entries(map).map(([type, s]) => [type, s ? { schema: schema(s) } : {}]),
  );
}

function operation(route: RouteEntry, doc: OperationDoc, schema: (s: TSchema) => Json): Json {
  const parameters: Json[] = [];
  for (const [name, s] of Object.entries(doc.params ?? {}))
    parameters.push({ name, in: 'path', required: true, schema: schema(s) });
  if (doc.query) {
    const required = new Set((doc.query.required as string[] | undefined) ?? []);
    for (const [name, s] of Object.entries(doc.query.properties)) {
      const isArray = (s as { type?: string }).type === 'array';
      parameters.push({
        name,
        in: 'query',
        required: required.has(name),
        schema: schema(s as TSchema),
        ...(isArray ? { style: 'form', explode: true } : {}),
      });
    }
  }
  if (route.beta) {
    parameters.push({
      name: 'anthropic-beta',
      in: 'header',
      required: true,
      description: `This extension endpoint requires the beta header (or \`vendor-beta\`): ${BETA_VERSION}`,
      schema: { type: 'string', const: BETA_VERSION },
    });
  }
  const op: Json = { operationId: doc.operationId, summary: doc.summary, tags: [doc.tag] };
  const notes = [
    doc.description,
    route.operator
      ? 'Operator only: requires the deployment operator key (API_KEY); a tenant key gets 403.'
      : undefined,
  ].filter(Boolean);
  if (notes.length) op.description = notes.join('\n\n');
  if (parameters.length) op.parameters = parameters;
  if (doc.body) {
    op.requestBody = {
      required: !!doc.body.required,
      content: {
        'application/json': { schema: schema(doc.body.schema), example: doc.body.example },
      },
    };
  } else if (doc.multipart) {
    op.requestBody = {
      required: true,
      content: {
        'multipart/form-data': {
          schema: schema(doc.multipart),
          encoding: { file: { contentType: 'application/octet-stream' } },
        },
      },
    };
  }
  const responses: Json = {};
  const okStatus = doc.ok.status ?? 200;
  if (okStatus < 400)
    responses[String(okStatus)] = {
      description: doc.ok.description,
      content: content(doc.ok.content, schema),
    };
  for (const [status, more] of Object.entries(doc.more ?? {}))
    responses[status] = { description: more.description, content: content(more.content, schema) };
  const errors = [400, 404];
  if (!route.public) errors.push(401, 403, 429);
  if (doc.body || doc.multipart) errors.push(413);
  if (doc.conflict) errors.push(409);
  const errorRef = { $ref: '#/components/schemas/ErrorBody' };
  const errorSchema = doc.graphql
    ? { anyOf: [errorRef, { $ref: '#/components/schemas/GraphQLResponse' }] }
    : errorRef;
  for (const status of errors.sort((a, b) => a - b)) {
    // An answer the entry documents itself (an HTML error page, say) keeps its own content.
    if (doc.more?.[status]) continue;
    const description =
      status === okStatus ? `${doc.ok.description} ${ERROR_TEXT[status]}` : ERROR_TEXT[status];
    responses[String(status)] = {
      description,
      content: { 'application/json': { schema: errorSchema } },
    };
  }
  op.responses = responses;
  op.security = route.public ? [] : [{ ApiKeyAuth: [] }, { BearerAuth: [] }];
  return op;
}

export interface OpenApiBuild {
  document: Json;
  /** Recorded routes with no entry in OPERATIONS (`METHOD /path`). */
  undocumented: string[];
  /** OPERATIONS entries with no recorded route. */
  stale: string[];
}

export function buildOpenApi(
  routes: readonly RouteEntry[],
  info: { version: string } = { version: '0.1.0' },
): OpenApiBuild {
  const named = new Map<TSchema, string>(NAMED.map(([n, s]) => [s, n]));
  const schema = converter(named);
  const paths: Record<string, Json> = {};
  const undocumented: string[] = [];
  const seen = new Set<string>();
  for (const route of routes) {
    const key = operationKey(route.method, route.url);
    const doc = OPERATIONS[key];
    if (!doc) {
      undocumented.push(key);
      continue;
    }
    seen.add(key);
    const path = (paths[openApiPath(route.url)] ??= {});
    path[route.method.toLowerCase()] = operation(route, doc, schema);
  }
  const stale = Object.keys(OPERATIONS).filter((k) => !seen.has(k));
  const document: Json = {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'agentfleet',
      version: info.version,
      description: `The agentfleet /v1 API (managed agents), its extensions (beta header \`anthropic-beta: ${BETA_VERSION}\`) and GraphQL. Generated from the route table and the TypeBox schemas the server validates with.`,
    },
    paths,
    components: {
      schemas: Object.fromEntries(NAMED.map(([n, s]) => [n, schema(s, true)])),
      securitySchemes: {
        ApiKeyAuth: {
          type: 'apiKey',
          in: 'header',
          name: 'x-api-key',
          description: 'A tenant API key, or the operator key.',
        },
        BearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            'The same key as `Authorization: Bearer <key>` (what the official SDK sends).',
        },
      },
    },
    security: [{ ApiKeyAuth: [] }, { BearerAuth: [] }],
  };
  return { document, undocumented, stale };
}
