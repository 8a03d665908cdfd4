/**
 * OpenAPI entries of the agent and environment routes (create, list, retrieve, versions,
 * update, delete, archive). test/e2e/api/openapi.test.ts fails when a route lacks an entry or an entry
 * names no route.
 */
import { Type } from '@sinclair/typebox';
import {
  Agent,
  AgentCreate,
  AgentListQuery,
  AgentRetrieveQuery,
  AgentUpdate,
  Deleted,
  Environment,
  EnvironmentCreate,
  EnvironmentListQuery,
  EnvironmentUpdate,
  ListPage,
  VersionListQuery,
} from '@agentfleet/schemas';
import { json, AgentId, EnvId, type OperationDoc } from './operationHelpers.js';

export const AGENT_AND_ENVIRONMENT_OPERATIONS: Record<string, OperationDoc> = {
  // ---- agents
  'POST /v1/agents': {
    operationId: 'createAgent',
    summary: 'Create an agent',
    tag: 'agents',
    body: {
      schema: AgentCreate,
      required: true,
      example: { name: 'Researcher', model: 'claude-sonnet-4-5' },
    },
    ok: { description: 'The agent (version 1).', content: json(Agent) },
  },
  'GET /v1/agents': {
    operationId: 'listAgents',
    summary: 'List agents',
    tag: 'agents',
    query: AgentListQuery,
    ok: { description: 'A page of agents.', content: json(ListPage(Agent)) },
  },
  'GET /v1/agents/:id': {
    operationId: 'getAgent',
    summary: 'Retrieve an agent (latest or `?version=`)',
    tag: 'agents',
    params: { id: AgentId },
    query: AgentRetrieveQuery,
    ok: { description: 'The agent.', content: json(Agent) },
  },
  'GET /v1/agents/:id/versions': {
    operationId: 'listAgentVersions',
    summary: "List an agent's versions",
    tag: 'agents',
    params: { id: AgentId },
    query: VersionListQuery,
    ok: { description: 'A page of versions.', content: json(ListPage(Agent)) },
  },
  'GET /v1/agents/:id/versions/:version': {
    operationId: 'getAgentVersion',
    summary: 'Retrieve one version of an agent',
    tag: 'agents',
    params: { id: AgentId, version: Type.Integer({ minimum: 1 }) },
    ok: { description: 'The agent at that version.', content: json(Agent) },
  },
  'PATCH /v1/agents/:id': {
    operationId: 'updateAgent',
    summary: 'Update an agent (a new version)',
    tag: 'agents',
    params: { id: AgentId },
    body: { schema: AgentUpdate, required: true, example: { name: 'Renamed' } },
    ok: { description: 'The agent.', content: json(Agent) },
    conflict: true,
  },
  'POST /v1/agents/:id': {
    operationId: 'updateAgentPost',
    summary: 'Update an agent (the SDK sends POST)',
    tag: 'agents',
    params: { id: AgentId },
    body: { schema: AgentUpdate, required: true, example: { name: 'Renamed' } },
    ok: { description: 'The agent.', content: json(Agent) },
    conflict: true,
  },
  'DELETE /v1/agents/:id': {
    operationId: 'deleteAgent',
    summary: 'Archive an agent',
    tag: 'agents',
    params: { id: AgentId },
    ok: { description: 'The archived agent.', content: json(Agent) },
  },
  'POST /v1/agents/:id/archive': {
    operationId: 'archiveAgent',
    summary: 'Archive an agent',
    tag: 'agents',
    params: { id: AgentId },
    ok: { description: 'The archived agent.', content: json(Agent) },
  },

  // ---- environments
  'POST /v1/environments': {
    operationId: 'createEnvironment',
    summary: 'Create an environment',
    tag: 'environments',
    body: { schema: EnvironmentCreate, required: true, example: { name: 'python' } },
    ok: { description: 'The environment.', content: json(Environment) },
  },
  'GET /v1/environments': {
    operationId: 'listEnvironments',
    summary: 'List environments',
    tag: 'environments',
    query: EnvironmentListQuery,
    ok: { description: 'A page of environments.', content: json(ListPage(Environment)) },
  },
  'GET /v1/environments/:id': {
    operationId: 'getEnvironment',
    summary: 'Retrieve an environment',
    tag: 'environments',
    params: { id: EnvId },
    ok: { description: 'The environment.', content: json(Environment) },
  },
  'PATCH /v1/environments/:id': {
    operationId: 'updateEnvironment',
    summary: 'Update an environment',
    tag: 'environments',
    params: { id: EnvId },
    body: { schema: EnvironmentUpdate, required: true, example: { name: 'renamed' } },
    ok: { description: 'The environment.', content: json(Environment) },
  },
  'POST /v1/environments/:id': {
    operationId: 'updateEnvironmentPost',
    summary: 'Update an environment (the SDK sends POST)',
    tag: 'environments',
    params: { id: EnvId },
    body: { schema: EnvironmentUpdate, required: true, example: { name: 'renamed' } },
    ok: { description: 'The environment.', content: json(Environment) },
  },
  'DELETE /v1/environments/:id': {
    operationId: 'deleteEnvironment',
    summary: 'Delete an environment (409 while agents reference it)',
    tag: 'environments',
    params: { id: EnvId },
    ok: { description: 'Deleted.', content: json(Deleted('environment_deleted')) },
    conflict: true,
  },
  'POST /v1/environments/:id/archive': {
    operationId: 'archiveEnvironment',
    summary: 'Archive an environment',
    tag: 'environments',
    params: { id: EnvId },
    ok: { description: 'The archived environment.', content: json(Environment) },
  },
};
