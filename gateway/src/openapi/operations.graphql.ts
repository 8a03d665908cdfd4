/**
 * OpenAPI entries of GraphQL over HTTP (Apollo) and graphql-sse (subscriptions), which share
 * the REST auth and rate limit. test/e2e/api/openapi.test.ts fails when a route lacks an entry or an
 * entry names no route.
 */
import { Type } from '@sinclair/typebox';
import { GraphQLRequest, GraphQLResponse } from '@agentfleet/schemas';
import { json, GQL_SSE, type OperationDoc } from './operationHelpers.js';

export const GRAPHQL_OPERATIONS: Record<string, OperationDoc> = {};
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
Object.assign(GRAPHQL_OPERATIONS, {
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
