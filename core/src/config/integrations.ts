/**
 * Integration settings (core/src/integrations): per provider, the app's credentials and API
 * base; the public origin providers reach; the webhook budgets. GITHUB_API_URL and
 * GITHUB_WEB_URL are the console section's (one GitHub per deployment). An integration whose
 * settings are unset is listed as not configured (its install is a 400 naming them); they are
 * never required at start. Schemas only; core/src/config/schema.ts reads them.
 */
import type { Refused } from './schema.js';
import { int, nullable, section, str } from './schema.js';

const absoluteUrl =
  (what: string, httpsOnly: boolean) =>
  (v: string | null, _ctx: unknown, name: string): string | false => {
    if (v === null) return false;
    try {
      const u = new URL(v);
      if (u.protocol !== 'https:' && (httpsOnly || u.protocol !== 'http:'))
        return `${name} must be an ${httpsOnly ? 'https' : 'http(s)'}:// URL (${what})`;
      if (u.username || u.password) return `${name} must not hold credentials`;
      return false;
    } catch {
      return `${name} must be an absolute URL (${what})`;
    }
  };

const optional = (env: string, description: string, secret = false) =>
  nullable(str(env, { default: null, description, ...(secret ? { secret: true } : {}) }));

export const INTEGRATIONS_INTERNAL_SECRET_REFUSED: Refused = {
  env: 'INTEGRATIONS_INTERNAL_SECRET',
  problem:
    'INTEGRATIONS_INTERNAL_SECRET is not supported: integrations run inside this platform (webhooks at the gateway, conversations in the workers), so there is no separate integrations service to share it with; unset it',
  description:
    'refused: the platform exits at start naming it as not supported. Integrations run inside the gateway and the workers (no separate integrations service), so there is no hop for it to authenticate',
};

export const IntegrationsSection = section(
  {
    integrationsPublicUrl: nullable(
      str('INTEGRATIONS_PUBLIC_URL', {
        default: null,
        check: absoluteUrl(
          'the origin providers and browsers reach the integration paths at',
          false,
        ),
        description:
          'the origin providers reach: OAuth callbacks are `INTEGRATIONS_PUBLIC_URL/v1/svc/integrations/<id>/callback`, webhooks `…/github/webhook`, `…/linear/webhook`, `…/slack/events`. Unset: no integration is configured',
      }),
    ),
    githubAppId: optional('GITHUB_APP_ID', 'the GitHub App id (integration `github`)'),
    githubAppPrivateKey: optional(
      'GITHUB_APP_PRIVATE_KEY',
      "the GitHub App's private key, PEM (PKCS#1 or PKCS#8; `\\n` escapes are read as newlines); signs the App JWT",
      true,
    ),
    githubClientId: optional(
      'GITHUB_CLIENT_ID',
      "the GitHub App's OAuth client id (user authorization at install)",
    ),
    githubClientSecret: optional(
      'GITHUB_CLIENT_SECRET',
      "the GitHub App's OAuth client secret",
      true,
    ),
    githubWebhookSecret: optional(
      'GITHUB_WEBHOOK_SECRET',
      "the GitHub App's webhook secret (X-Hub-Signature-256)",
      true,
    ),
    linearClientId: optional(
      'LINEAR_CLIENT_ID',
      'the Linear OAuth app client id (integration `linear`, `actor=app`)',
    ),
    linearClientSecret: optional(
      'LINEAR_CLIENT_SECRET',
      'the Linear OAuth app client secret',
      true,
    ),
    linearWebhookSecret: optional(
      'LINEAR_WEBHOOK_SECRET',
      "the Linear app's webhook signing secret (Linear-Signature)",
      true,
    ),
    linearApiUrl: str('LINEAR_API_URL', {
      default: 'https://api.linear.app',
      check: absoluteUrl("Linear's API origin", true),
      description:
        "Linear's API origin (GraphQL at /graphql, OAuth token and revoke). The authorize page is the same origin without a leading `api.` label",
    }),
    slackClientId: optional(
      'SLACK_CLIENT_ID',
      'the Slack app client id (integration `slack`, OAuth v2)',
    ),
    slackClientSecret: optional('SLACK_CLIENT_SECRET', 'the Slack app client secret', true),
    slackSigningSecret: optional(
      'SLACK_SIGNING_SECRET',
      "the Slack app's signing secret (v0 signatures of Events API requests)",
      true,
    ),
    slackApiUrl: str('SLACK_API_URL', {
      default: 'https://slack.com/api',
      check: absoluteUrl("Slack's Web API base", true),
      description:
        "Slack's Web API base (methods at `<base>/<method>`; the authorize page at its origin's /oauth/v2/authorize)",
    }),
    webhooksPerAddressPerMinute: int('INTEGRATIONS_WEBHOOKS_PER_ADDRESS_PER_MINUTE', {
      default: 600,
      min: 1,
      description:
        'inbound provider webhook requests per client address per minute, counted before the signature is checked (over: 429)',
    }),
    webhooksPerTenantPerMinute: int('INTEGRATIONS_WEBHOOKS_PER_TENANT_PER_MINUTE', {
      default: 300,
      min: 1,
      description:
        'verified provider events per tenant per minute (over: 429; the provider redelivers)',
    }),
  },
  { refuses: [INTEGRATIONS_INTERNAL_SECRET_REFUSED] },
);
