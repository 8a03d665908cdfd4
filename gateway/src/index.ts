export { buildApp } from './app.js';
export { startServer, type RunningServer } from './server.js';
