/**
 * The tools a session gets from the integration thread it serves: the provider actions its
 * publication's capabilities enable (./port.ts ProviderAction; GitHub `pull_request`, Linear
 * `state_change`), offered in the turn as the tools of an MCP server named
 * `<integration>_integration` (workers/src/tools/mcp.ts) and run here, in the control plane,
 * with the install's token — the agent and its sandbox never hold it.
 *
 * Guarantees (test/e2e/integrations/github-repository.test.ts, test/e2e/integrations/linear.test.ts):
 * - only a session an integration started has them (the thread record names the session; the
 *   session's `metadata.integration`, which a tenant can write, only saves reads for others);
 * - only the actions the publication's capabilities name; a capability removed or a
 *   publication deleted since the turn started, or an uninstall, makes the call an error result;
 * - a provider refusal or a bad input is the call's is_error text (the provider's message, no
 *   token); anything else throws (the turn reports it).
 */
import type { Logger } from '../log.js';
import type { Collections } from '../store/collections.js';
import {
  INTEGRATION_IDS,
  IntegrationError,
  type IntegrationId,
  type ProviderAction,
} from './port.js';
import type { IntegrationService } from './service.js';

/** The MCP server name the turn offers an integration's tools under. */
export const actionServerName = (integration: IntegrationId) => `${integration}_integration`;

export interface ThreadTools {
  server: string;
  /** As an MCP server lists its tools. */
  tools: Array<{ name: string; description: string; inputSchema: Record<string, unknown> }>;
  call(tool: string, input: Record<string, unknown>): Promise<{ text: string; isError: boolean }>;
}

export class ThreadActions {
  constructor(
    private readonly d: { c: Collections; integrations: IntegrationService; log: Logger },
  ) {}

  private async enabled(tenant: string, publicationId: string, integration: IntegrationId) {
    const pub = await this.d.c.integrationPublications.get(tenant, publicationId);
    if (!pub) return [];
    const provider = this.d.integrations.provider(integration);
    return provider.actions.filter((a) => pub.capabilities.includes(a.capability));
  }

  /** The tools of the thread session `s` serves, or null (none, or not an integration's). */
  async forSession(
    tenant: string,
    s: { _id: string; metadata?: Record<string, string> },
  ): Promise<ThreadTools | null> {
    const hint = s.metadata?.integration;
    if (!INTEGRATION_IDS.includes(hint as IntegrationId)) return null;
    const thread = await this.d.c.integrationThreads.findOne(tenant, { session_id: s._id });
    if (!thread) return null;
    const actions = await this.enabled(tenant, thread.publication_id, thread.integration);
    if (!actions.length) return null;
    const err = (text: string) => ({ text, isError: true });
    return {
      server: actionServerName(thread.integration),
      tools: actions.map((a) => ({
        name: a.tool,
        description: a.description,
        inputSchema: a.input_schema,
      })),
      call: async (tool, input) => {
        // The publication and install as they are now, not as the turn started.
        const now = await this.enabled(tenant, thread.publication_id, thread.integration);
        const action: ProviderAction | undefined = now.find((a) => a.tool === tool);
        if (!action) return err(`${tool} is not enabled by this thread's publication`);
        const install = await this.d.c.integrationInstalls.get(tenant, thread.install_id);
        if (!install) return err(`the ${thread.integration} integration is no longer installed`);
        const current = await this.d.c.integrationThreads.get(tenant, thread._id);
        try {
          const text = await this.d.integrations.withCredentials(install, (creds) =>
            action.run(creds, current?.target ?? thread.target, input),
          );
          this.d.log.info('integration action', {
            session: s._id,
            integration: thread.integration,
            tool,
          });
          return { text, isError: false };
        } catch (e) {
          if (!(e instanceof IntegrationError)) throw e;
          this.d.log.warn('integration action refused', {
            session: s._id,
            tool,
            status: e.status,
            reason: e.message,
          });
          return err(e.message);
        }
      },
    };
  }
}
