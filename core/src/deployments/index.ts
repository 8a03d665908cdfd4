export { DeploymentService, renderDeployment, renderRun } from './service.js';
export { startDeploymentScheduler, type RunningScheduler, type TickResult } from './scheduler.js';
export { scheduledRunId, type WebhookEmitter as DeploymentWebhookEmitter } from './firing.js';
export type { DeploymentDoc, DeploymentRunDoc } from './docs.js';
