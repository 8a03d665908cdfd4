/**
 * MCP_SIGNING_KEY, refused by the secrets section (core/src/config/process.ts). The spec lists it
 * among the deployment secrets, and says outbound MCP tokens are signed by PLATFORM_ROOT_SECRET.
 * This deployment mints no signed MCP token at all: MCP servers get the agent's sealed
 * `authorization_token` or a vault credential (static bearer, OAuth), injected by the MCP proxy,
 * and local-runtime children call the proxy with API_KEY. A signing key would have nothing to
 * sign, so setting it (non-empty) is a start-up problem rather than a setting silently ignored,
 * and the value is never echoed. Proved by test/e2e/server/mcp-signing-key.test.ts.
 */
import type { Refused } from './schema.js';

export const MCP_SIGNING_KEY_REFUSED: Refused = {
  env: 'MCP_SIGNING_KEY',
  problem:
    'MCP_SIGNING_KEY is not supported: this deployment signs no MCP tokens (MCP servers get the agent’s authorization_token or a vault credential through the MCP proxy); unset it',
  description:
    "refused: the platform exits at start naming it as not supported. It signs no MCP tokens (MCP servers get the agent's sealed `authorization_token` or a vault credential through the MCP proxy), so there is nothing for the key to sign (`test/e2e/server/mcp-signing-key.test.ts`)",
};
