/**
 * OpenAPI entries of the deployment and deployment run routes (gateway/src/routes/deployments.ts).
 * test/e2e/api/openapi.test.ts fails when a route lacks an entry or an entry names no route.
 */
import {
  Deployment,
  DeploymentCreate,
  DeploymentListQuery,
  DeploymentRun,
  DeploymentRunListQuery,
  DeploymentUpdate,
  Id,
  ListPage,
} from '@agentfleet/schemas';
import { json, type OperationDoc } from './operationHelpers.js';

const tag = 'deployments';
const params = { id: Id('depl_') };
const one = { description: 'The deployment.', content: json(Deployment) };
const oneRun = {
  description: 'The run: its session_id, or the error that kept the session from being created.',
  content: json(DeploymentRun),
};

export const DEPLOYMENT_OPERATIONS: Record<string, OperationDoc> = {
  'POST /v1/deployments': {
    operationId: 'createDeployment',
    summary: 'Create a deployment (an agent, environment, vaults, initial events, cron schedule)',
    tag,
    body: {
      schema: DeploymentCreate,
      required: true,
      example: {
        agent: 'agent_01example',
        environment_id: 'env_01example',
        name: 'nightly report',
        initial_events: [{ type: 'user.message', content: [{ type: 'text', text: 'Report.' }] }],
        schedule: { type: 'cron', expression: '0 9 * * 1-5', timezone: 'UTC' },
      },
    },
    ok: one,
  },
  'GET /v1/deployments': {
    operationId: 'listDeployments',
    summary: 'List deployments (newest first)',
    tag,
    query: DeploymentListQuery,
    ok: { description: 'A page of deployments.', content: json(ListPage(Deployment)) },
  },
  'GET /v1/deployments/:id': {
    operationId: 'getDeployment',
    summary: 'Retrieve a deployment',
    tag,
    params,
    ok: one,
  },
  'POST /v1/deployments/:id': {
    operationId: 'updateDeployment',
    summary: 'Update a deployment (refused once archived)',
    tag,
    params,
    body: { schema: DeploymentUpdate, required: true, example: { name: 'renamed' } },
    ok: one,
  },
  'POST /v1/deployments/:id/archive': {
    operationId: 'archiveDeployment',
    summary: 'Archive a deployment (final: no more runs or updates)',
    tag,
    params,
    ok: one,
  },
  'POST /v1/deployments/:id/pause': {
    operationId: 'pauseDeployment',
    summary: 'Pause the schedule (manual runs still work)',
    tag,
    params,
    ok: one,
  },
  'POST /v1/deployments/:id/unpause': {
    operationId: 'unpauseDeployment',
    summary: 'Unpause the schedule (minutes missed while paused are not backfilled)',
    tag,
    params,
    ok: one,
  },
  'POST /v1/deployments/:id/run': {
    operationId: 'runDeployment',
    summary: 'Run the deployment now (creates a session; works while paused)',
    tag,
    params,
    ok: oneRun,
  },
  'GET /v1/deployment_runs': {
    operationId: 'listDeploymentRuns',
    summary: 'List deployment runs (newest first; has_error, trigger_type, deployment_id filters)',
    tag,
    query: DeploymentRunListQuery,
    ok: { description: 'A page of runs.', content: json(ListPage(DeploymentRun)) },
  },
  'GET /v1/deployment_runs/:id': {
    operationId: 'getDeploymentRun',
    summary: 'Retrieve a deployment run',
    tag,
    params: { id: Id('drun_') },
    ok: oneRun,
  },
};
