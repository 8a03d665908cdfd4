/**
 * Integrations (GitHub, Linear, Slack): installs by OAuth, publications, inbound webhooks and
 * conversations. `integrationProviders` builds the three adapters from the configuration; the
 * composition root (server/src/platform.ts) wires the service, the ingest and the relay.
 */
import type { Config } from '../config/config.js';
import type { ProviderContext, IntegrationId, IntegrationProvider } from './port.js';
import { GithubProvider } from './providers/github.js';
import { LinearProvider } from './providers/linear.js';
import { SlackProvider } from './providers/slack.js';

/** PEM from an environment variable: literal `\n` escapes become newlines. */
const pem = (v: string | null) => (v && !v.includes('\n') ? v.replace(/\\n/g, '\n') : v);

export function integrationProviders(
  config: Config,
  ctx: ProviderContext,
): Map<IntegrationId, IntegrationProvider> {
  const providers: IntegrationProvider[] = [
    new GithubProvider(
      {
        appId: config.githubAppId,
        privateKey: pem(config.githubAppPrivateKey),
        clientId: config.githubClientId,
        clientSecret: config.githubClientSecret,
        webhookSecret: config.githubWebhookSecret,
        apiUrl: config.githubApiUrl.replace(/\/$/, ''),
        webUrl: config.githubWebUrl.replace(/\/$/, ''),
      },
      ctx,
    ),
    new LinearProvider(
      {
        clientId: config.linearClientId,
        clientSecret: config.linearClientSecret,
        webhookSecret: config.linearWebhookSecret,
        apiUrl: config.linearApiUrl.replace(/\/$/, ''),
      },
      ctx,
    ),
    new SlackProvider(
      {
        clientId: config.slackClientId,
        clientSecret: config.slackClientSecret,
        signingSecret: config.slackSigningSecret,
        apiUrl: config.slackApiUrl.replace(/\/$/, ''),
      },
      ctx,
    ),
  ];
  return new Map(providers.map((p) => [p.id, p]));
}

export { IntegrationService, STATE_TTL_MS } from './service.js';
export { WebhookIngest, DELIVERY_TTL_MS, type IngestAnswer } from './ingest.js';
export { Conversations, relayIdleTurns } from './conversations.js';
export { ThreadActions, actionServerName, type ThreadTools } from './actions.js';
export {
  INTEGRATION_IDS,
  WEBHOOK_PATHS,
  IntegrationError,
  type IntegrationId,
  type InboundEvent,
} from './port.js';
