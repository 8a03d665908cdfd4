import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApolloServer, type ApolloServerPlugin } from '@apollo/server';
import { GraphQLError } from 'graphql/index.js';
import { ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { fastifyApolloHandler } from '@as-integrations/fastify';
import { typeDefs } from '@agentfleet/schemas';
import { createLogger } from '@agentfleet/core';
import { formatError, toGraphQLError } from './errors.js';
import { evalTypeDefs } from './evals.js';
import { threadTypeDefs } from './threads.js';
import { resolvers } from './resolvers.js';
import { makeSchema, type GqlContext, type ResolverServices } from './schema.js';
import { eventStreamRoute, wantsEventStream } from './stream.js';
import { armorRules, preflight } from './limits.js';
import type { RateLimits } from '../requestGuards.js';
import type { StreamSlots } from '../sse.js';

/** What GraphQL uses: the resolvers' services, its limits' configuration and rate limits. */
export type GraphqlServices = ResolverServices & RateLimits;

/** Apollo serves queries and mutations only: a subscription sent to it is told where to go. */
const subscriptionsElsewhere: ApolloServerPlugin<GqlContext> = {
  async requestDidStart() {
    return {
      async didResolveOperation({ operation }) {
        if (operation?.operation !== 'subscription') return;
        throw new GraphQLError(
          'subscriptions are served over graphql-sse: POST /graphql/stream (or /graphql with Accept: text/event-stream)',
          {
            extensions: {
              code: 'BAD_REQUEST',
              type: 'invalid_request',
              http_status: 400,
              http: { status: 400 },
            },
          },
        );
      },
    };
  },
};

/**
 * GraphQL on the gateway's fastify instance, behind the same auth hook, rate limit and error
 * handler as REST:
 * - `/graphql` (GET, POST): Apollo Server 5, queries and mutations;
 * - `/graphql/stream` (graphql-sse): subscriptions; `/graphql` also serves graphql-sse for
 *   requests that ask for `Accept: text/event-stream` (or carry a stream token), and its
 *   single-connection PUT/DELETE.
 *
 * Every GraphQL request first passes the document limits of limits.ts (tokens, cost, the cost
 * charged to the tenant's rate limit); depth, alias and cost rules run in both servers'
 * validation. Apollo's persisted queries are off: every request carries its document, so
 * every request is checked.
 *
 * Apollo's fastify drain plugin is not used: it closes the fastify instance from Apollo's stop,
 * while here the instance's close stops Apollo (onClose) and ends open event streams (preClose).
 */
export async function graphqlPlugin(
  app: FastifyInstance,
  p: GraphqlServices,
  streams: StreamSlots,
): Promise<void> {
  const log = createLogger(p.config.logLevel, { component: 'graphql' });
  const subscriptions = new Set<AbortController>();
  const schema = makeSchema(
    typeDefs + evalTypeDefs + threadTypeDefs,
    resolvers({ subscriptions }),
    (err) => toGraphQLError(err, log),
  );

  const apollo = new ApolloServer<GqlContext>({
    schema,
    introspection: true,
    includeStacktraceInErrorResponses: false,
    formatError: formatError(log),
    // Every request needs x-api-key or Authorization, neither of which a browser sends on a
    // simple (preflight-free) request, so those headers also satisfy CSRF prevention.
    csrfPrevention: {
      requestHeaders: [
        'x-api-key',
        'authorization',
        'x-apollo-operation-name',
        'apollo-require-preflight',
      ],
    },
    plugins: [ApolloServerPluginLandingPageDisabled(), subscriptionsElsewhere],
    validationRules: armorRules(p.config.graphqlLimits),
    persistedQueries: false,
  });
  await apollo.start();
  const apolloHandler = fastifyApolloHandler<GqlContext>(apollo, {
    context: async (req) => ({ principal: req.principal, services: p }),
  });
  const sse = eventStreamRoute(schema, p, streams, log);
  /** The limits first: a refused document never reaches Apollo or graphql-sse. */
  const limited = (
    handle: (this: FastifyInstance, req: FastifyRequest, reply: FastifyReply) => unknown,
  ) =>
    async function (this: FastifyInstance, req: FastifyRequest, reply: FastifyReply) {
      const refusal = await preflight(schema, p, req, reply);
      if (refusal)
        return reply
          .code(refusal.status)
          .type('application/json; charset=utf-8')
          .send(refusal.body);
      return handle.call(this, req, reply);
    };
  const apolloOrStream = function (
    this: FastifyInstance,
    req: FastifyRequest,
    reply: FastifyReply,
  ) {
    if (wantsEventStream(req)) return sse.handle(req, reply);
    return (
      apolloHandler as unknown as (
        this: FastifyInstance,
        req: FastifyRequest,
        reply: FastifyReply,
      ) => Promise<unknown>
    ).call(this, req, reply);
  };

  app.route({ method: ['GET', 'POST'], url: '/graphql', handler: limited(apolloOrStream) });
  app.route({ method: ['PUT', 'DELETE'], url: '/graphql', handler: limited(sse.handle) });
  app.route({
    method: ['GET', 'POST', 'PUT', 'DELETE'],
    url: '/graphql/stream',
    handler: limited(sse.handle),
  });

  app.addHook('preClose', async () => {
    for (const ac of subscriptions) ac.abort();
    await sse.closeAll();
  });
  app.addHook('onClose', async () => {
    await apollo.stop();
  });
}
