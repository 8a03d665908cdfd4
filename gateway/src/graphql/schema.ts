// 'graphql/index.js', not 'graphql': graphql ships CJS (main) and ESM (module) builds, and Apollo
// and graphql-sse load the CJS one under Node. Bundler-style resolution (vitest) would hand this
// file the ESM one, a second graphql instance whose schema and errors Apollo rejects.
import {
  assertValidSchema,
  buildSchema,
  isObjectType,
  type GraphQLFieldResolver,
  type GraphQLSchema,
} from 'graphql/index.js';
import { invalid, MAX_JSON_DEPTH, valueDepth, type Principal } from '@agentfleet/core';
import type { GatewayServices } from '../services.js';

/** The services the resolvers call. */
export type ResolverServices = Pick<
  GatewayServices,
  'agents' | 'environments' | 'sessions' | 'events' | 'dashboard' | 'cost' | 'evals'
>;

/** Per-operation context: the principal set by the gateway's auth hook, and the services. */
export type GqlContext = {
  principal: Principal;
  services: ResolverServices;
};

export type Resolver = GraphQLFieldResolver<any, GqlContext, any>;
export interface SubscriptionResolver {
  subscribe: Resolver;
  resolve?: Resolver;
}
export type ResolverMap = Record<string, Record<string, Resolver | SubscriptionResolver>>;

/**
 * Builds the executable schema from the SDL and a resolver map, shared by Apollo (queries,
 * mutations) and graphql-sse (subscriptions). `mapError` wraps every resolver so services'
 * errors reach clients in one shape on both transports, and refuses arguments (JSON inputs,
 * from literals or variables) nesting deeper than MAX_JSON_DEPTH, as REST refuses such bodies. Unknown types or fields in the map, and
 * root fields without a resolver, fail at startup rather than at request time.
 *
 * The JSON scalar needs no code: graphql-js's default scalar serializes and parses values as
 * they are, and literals through valueFromASTUntyped.
 */
export function makeSchema(
  typeDefs: string,
  resolvers: ResolverMap,
  mapError: (err: unknown) => Error,
): GraphQLSchema {
  const schema = buildSchema(typeDefs);
  const guard =
    (fn: Resolver): Resolver =>
    async (source, args, ctx, info) => {
      try {
        for (const [name, value] of Object.entries(args ?? {})) {
          if (valueDepth(value, MAX_JSON_DEPTH) > MAX_JSON_DEPTH)
            throw invalid(
              name,
              `JSON nests deeper than the limit of ${MAX_JSON_DEPTH} levels of objects and arrays`,
            );
        }
        return await fn(source, args, ctx, info);
      } catch (err) {
        throw mapError(err);
      }
    };
  for (const [typeName, fields] of Object.entries(resolvers)) {
    const type = schema.getType(typeName);
    if (!isObjectType(type))
      throw new Error(`graphql resolvers: ${typeName} is not an object type of the schema`);
    const defs = type.getFields();
    for (const [name, r] of Object.entries(fields)) {
      const field = defs[name];
      if (!field) throw new Error(`graphql resolvers: ${typeName}.${name} is not in the schema`);
      if (typeof r === 'function') {
        field.resolve = guard(r);
      } else {
        field.subscribe = guard(r.subscribe);
        field.resolve = r.resolve ? guard(r.resolve) : (v: unknown) => v;
      }
    }
  }
  for (const root of [
    schema.getQueryType(),
    schema.getMutationType(),
    schema.getSubscriptionType(),
  ]) {
    for (const field of Object.values(root?.getFields() ?? {})) {
      if (!field.resolve)
        throw new Error(`graphql resolvers: ${root!.name}.${field.name} has no resolver`);
    }
  }
  assertValidSchema(schema);
  return schema;
}
