/**
 * OpenAPI entries of the MCP proxy route (gateway/src/routes/mcpProxy.ts), one per method.
 * test/e2e/api/openapi.test.ts fails when a route lacks an entry or an entry names no route.
 */
import { Type } from '@sinclair/typebox';
import { Id } from '@agentfleet/schemas';
import { BYTES, type OperationDoc } from './operationHelpers.js';

const params = {
  sid: Id('sess_'),
  server: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' }),
};
const ok = {
  description:
    "The MCP server's answer as it came (JSON or text/event-stream), with the bearer injected upstream and never echoed.",
  content: BYTES,
};
const example = { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} };
const path = '/v1/svc/mcp-proxy/:sid/:server';
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
/** The `/*` route's rest of the path (openApiPath names a trailing `*` `{filename}/{nested_path}`). */
const subParams = {
  ...params,
  filename: Type.String({
    description:
      "The first segment of the path on the MCP server's origin (an HTTP+SSE server's message endpoint, as its rewritten `endpoint` event names it).",
  }),
  nested_path: Type.String({ description: 'The rest of that path; the query is forwarded too.' }),
};

export const MCP_PROXY_OPERATIONS: Record<string, OperationDoc> = Object.fromEntries(
  METHODS.flatMap((method) => [
    [
      `${method} ${path}`,
      {
        operationId: `mcpProxy${method[0]}${method.slice(1).toLowerCase()}`,
        summary: `MCP proxy (${method}): forward to the session's url MCP server (operator key)`,
        tag: 'mcp_proxy',
        params,
        ...(['POST', 'PUT', 'PATCH'].includes(method)
          ? { body: { schema: Type.Unknown(), example } }
          : {}),
        ok,
      } satisfies OperationDoc,
    ],
    [
      `${method} ${path}/*`,
      {
        operationId: `mcpProxyPath${method[0]}${method.slice(1).toLowerCase()}`,
        summary: `MCP proxy (${method}): forward to a path on the origin of the session's url MCP server (HTTP+SSE message endpoint; another origin is a 400 naming path)`,
        tag: 'mcp_proxy',
        params: subParams,
        ...(['POST', 'PUT', 'PATCH'].includes(method)
          ? { body: { schema: Type.Unknown(), example } }
          : {}),
        ok,
      } satisfies OperationDoc,
    ],
  ]),
);
