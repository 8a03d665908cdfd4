/**
 * Every route's OpenAPI entry (see OperationDoc in ./operationHelpers.ts), merged from the
 * resource groups in ./operations.{platform,agents,sessions,graphql}.ts. A route registered
 * without an entry, or an entry for a route that no longer exists, fails test/e2e/api/openapi.test.ts
 * with the key to add or remove.
 */
import type { OperationDoc } from './operationHelpers.js';
import { AGENT_AND_ENVIRONMENT_OPERATIONS } from './operations.agents.js';
import { GRAPHQL_OPERATIONS } from './operations.graphql.js';
import { META_OPERATIONS, MODEL_AND_OPERATOR_OPERATIONS } from './operations.platform.js';
import { SESSION_AND_FILE_OPERATIONS } from './operations.sessions.js';
import { VAULT_OPERATIONS } from './operations.vaults.js';
import { MCP_PROXY_OPERATIONS } from './operations.mcpProxy.js';
import { DEPLOYMENT_OPERATIONS } from './operations.deployments.js';
import { WORK_OPERATIONS } from './operations.work.js';
import { WEBHOOK_OPERATIONS } from './operations.webhooks.js';
import { SKILL_OPERATIONS } from './operations.skills.js';
import { SKILL_SOURCE_OPERATIONS } from './operations.skillSources.js';
import { MEMORY_SEARCH_OPERATIONS } from './operations.memorySearch.js';
import { MEMORY_STORE_OPERATIONS } from './operations.memoryStores.js';
import { DREAM_OPERATIONS } from './operations.dreams.js';
import { CONSOLE_OPERATIONS } from './operations.console.js';
import { INTEGRATION_OPERATIONS } from './operations.integrations.js';
import { COST_OPERATIONS } from './operations.cost.js';
import { EVAL_OPERATIONS } from './operations.evals.js';

export type { OperationDoc } from './operationHelpers.js';

export const OPERATIONS: Readonly<Record<string, OperationDoc>> = {
  ...META_OPERATIONS,
  ...AGENT_AND_ENVIRONMENT_OPERATIONS,
  ...SESSION_AND_FILE_OPERATIONS,
  ...MODEL_AND_OPERATOR_OPERATIONS,
  ...GRAPHQL_OPERATIONS,
  ...VAULT_OPERATIONS,
  ...MCP_PROXY_OPERATIONS,
  ...DEPLOYMENT_OPERATIONS,
  ...WORK_OPERATIONS,
  ...WEBHOOK_OPERATIONS,
  ...SKILL_OPERATIONS,
  ...SKILL_SOURCE_OPERATIONS,
  ...MEMORY_SEARCH_OPERATIONS,
  ...MEMORY_STORE_OPERATIONS,
  ...DREAM_OPERATIONS,
  ...CONSOLE_OPERATIONS,
  ...INTEGRATION_OPERATIONS,
  ...COST_OPERATIONS,
  ...EVAL_OPERATIONS,
};
export const operationKey = (method: string, url: string) => `${method} ${url}`;
