export { buildApp } from './app.js';
export { startServer, type RunningServer } from './server.js';
export {
  buildOpenApi,
  routeTableOf,
  OPERATIONS,
  type RouteEntry,
  type OperationDoc,
} from './openapi/index.js';
