export { WorkService, type SessionClaim, type WorkDeps, type WorkWebhookEmitter } from './work.js';
export { isSessionsToken, SESSIONS_TOKEN_PREFIX } from './tokens.js';
export {
  renderWork,
  type WorkDoc,
  type WorkState,
  type WorkView,
  NO_HEARTBEAT,
} from './records.js';
