/**
 * MCP_SIGNING_KEY, for core/src/config.ts. The spec lists it among the deployment secrets, and
 * says outbound MCP tokens are signed by PLATFORM_ROOT_SECRET. This deployment mints no signed
 * MCP token at all: MCP servers get the agent's sealed `authorization_token` or a vault
 * credential (static bearer, OAuth), injected by the MCP proxy, and local-runtime children call
 * the proxy with API_KEY. A signing key would have nothing to sign, so setting it is a start-up
 * problem rather than a setting silently ignored, and the value is never echoed. Proved by
 * test/mcp-signing-key.test.ts.
 */
import type { Env } from './http.js';

export function refuseMcpSigningKey(env: Env, problems: string[]): void {
  if (env.MCP_SIGNING_KEY)
    problems.push(
      'MCP_SIGNING_KEY is not supported: this deployment signs no MCP tokens (MCP servers get the agent’s authorization_token or a vault credential through the MCP proxy); unset it',
    );
}
