export { DeploymentService, renderDeployment, renderRun } from './deployments.js';
export type { TickResult } from './scheduler.js';
export { scheduledRunId, type WebhookEmitter as DeploymentWebhookEmitter } from './firing.js';
export type { DeploymentDoc, DeploymentRunDoc } from './records.js';
