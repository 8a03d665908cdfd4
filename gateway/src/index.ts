export { buildApp, buildOpsApp, type AppOptions } from './app.js';
export { buildMetricsApp } from './metricsRoute.js';
export { graphqlPlugin } from './graphql/index.js';
export {
  buildOpenApi,
  routeTableOf,
  OPERATIONS,
  type RouteEntry,
  type OperationDoc,
} from './openapi/index.js';
