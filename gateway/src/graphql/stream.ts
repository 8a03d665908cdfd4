import { randomUUID } from 'node:crypto';
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { specifiedRules, validate, type GraphQLSchema } from 'graphql/index.js';
import { createHandler, TOKEN_HEADER_KEY, TOKEN_QUERY_KEY } from 'graphql-sse';
import { ApiError, type Logger } from '@agentfleet/core';
import { formatStreamedErrors, tagValidationErrors } from './errors.js';
import { armorRules } from './limits.js';
import type { GqlContext } from './schema.js';
import type { StreamSlots } from '../sse.js';
import type { GraphqlServices } from './index.js';

const header = (req: FastifyRequest, key: string): string | null => {
  const v = req.headers[key.toLowerCase()];
  if (v === undefined) return null;
  const s = Array.isArray(v) ? v.join(', ') : v;
  // graphql-sse matches the accept header exactly; `text/event-stream, */*` means the same.
  if (key.toLowerCase() === 'accept' && s.includes('text/event-stream')) return 'text/event-stream';
  return s;
};

/** Requests on /graphql that belong to graphql-sse rather than Apollo. */
export const wantsEventStream = (req: FastifyRequest) =>
  header(req, 'accept') === 'text/event-stream' || header(req, TOKEN_HEADER_KEY) !== null;

/**
 * GraphQL over Server-Sent Events (the graphql-sse protocol, both "distinct connections" and
 * "single connection" modes) on the fastify instance. Auth ran in the app's onRequest hook
 * (requests without a valid key never get here), and the operation context carries that
 * request's principal. graphql-sse's generic handler is used with a small adapter rather than
 * its fastify one, which reads a missing header as the string "undefined" (so every
 * token-less request would share the stream token "undefined").
 *
 * Single-connection stream tokens are namespaced by tenant: a token reserved by one tenant
 * cannot be used, completed or attached to by another.
 */
export function eventStreamRoute(
  schema: GraphQLSchema,
  p: GraphqlServices,
  streams: StreamSlots,
  log: Logger,
) {
  const open = new Set<ServerResponse>();
  // graphql-js's rules plus the depth, alias and cost limits (limits.ts), as Apollo validates.
  const rules = [...specifiedRules, ...armorRules(p.config.graphqlLimits)];
  const handler = createHandler<FastifyRequest, undefined, GqlContext>({
    schema,
    authenticate: (req) => {
      const ns = `${req.raw.principal.tenantId}:`;
      const token =
        req.headers.get(TOKEN_HEADER_KEY) ||
        new URL(req.url, 'http://localhost/').searchParams.get(TOKEN_QUERY_KEY) ||
        randomUUID();
      return token.startsWith(ns) ? token : ns + token;
    },
    context: (req) => ({ principal: req.raw.principal, services: p }),
    validate: (schema: GraphQLSchema, document: Parameters<typeof validate>[1]) =>
      tagValidationErrors(validate(schema, document, rules)),
    onNext: (_ctx, _req, result) => formatStreamedErrors(result, log),
  });

  async function handle(req: FastifyRequest, reply: FastifyReply): Promise<void> {
    let response;
    try {
      response = await handler({
        method: req.method,
        url: req.url,
        headers: { get: (key) => header(req, key) },
        body: (req.body ?? null) as string | Record<PropertyKey, unknown> | null,
        raw: req,
        context: undefined,
      });
    } catch (err) {
      log.error('graphql-sse handler failed', {
        request_id: String(req.id),
        err: String((err as Error)?.stack ?? err),
      });
      throw new ApiError('internal_error', 'internal error');
    }
    const [body, init] = response;
    if (!body || typeof body === 'string') {
      reply.code(init.status).headers(init.headers ?? {});
      await reply.send(body ?? '');
      return;
    }
    // One of the tenant's open streams (../sse.ts StreamSlots): none left, the operations
    // just started are completed and the answer is 429.
    let giveSlot: () => void;
    try {
      giveSlot = streams.take(req.principal.tenantId, reply);
    } catch (err) {
      await body.return(undefined);
      throw err;
    }
    reply.hijack();
    const res = reply.raw;
    res.writeHead(init.status, {
      ...reply.getHeaders(),
      ...init.headers,
      'x-accel-buffering': 'no',
    } as OutgoingHttpHeaders);
    res.flushHeaders?.();
    open.add(res);
    // The client went away (or the server is closing): complete the operations, which aborts
    // their event followers.
    const stop = () => void body.return(undefined);
    res.once('close', stop);
    try {
      for await (const chunk of body) {
        if (!res.writable) break;
        res.write(chunk);
      }
    } catch (err) {
      log.error('graphql-sse stream failed', {
        request_id: String(req.id),
        err: String((err as Error)?.stack ?? err),
      });
    } finally {
      res.off('close', stop);
      open.delete(res);
      giveSlot();
      res.end();
    }
  }

  return {
    handle,
    /**
     * Server shutdown, after the subscriptions were aborted: gives their streams a moment to
     * send `complete` and end, then ends whatever is still open (single-connection streams stay
     * open after their operations finish) so closing does not wait on them.
     */
    async closeAll(graceMs = 1000) {
      const deadline = Date.now() + graceMs;
      while (open.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      for (const res of open) res.end();
    },
  };
}
