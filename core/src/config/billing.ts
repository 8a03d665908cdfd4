/**
 * Billing sources of the cost report (core/src/cost/billing): per provider, the admin
 * credential and the API base; the generic JSONL export's URL and token; the retry and timeout
 * budget of every billing request. A source whose credential (or URL) is unset is not read: the
 * report then behaves as without it (the runtime ledger priced by the price card). Schemas only;
 * core/src/config/schema.ts reads them.
 *
 * A base URL is https://, or http:// only to a loopback host (a local fixture or proxy): an admin
 * key is never sent in clear over a network. URLs must not hold credentials.
 */
import { int, nullable, section, str } from './schema.js';

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

const baseUrl = (v: string | null, _ctx: unknown, name: string): string | false => {
  if (v === null) return false;
  try {
    const u = new URL(v);
    if (u.username || u.password) return `${name} must not hold credentials`;
    if (u.protocol === 'https:') return false;
    if (u.protocol === 'http:' && LOOPBACK.has(u.hostname)) return false;
    return `${name} must be an https:// URL (http:// only to a loopback host)`;
  } catch {
    return `${name} must be an absolute URL`;
  }
};

export const BillingSection = section({
  billing: section({
    anthropicAdminKey: nullable(
      str('BILLING_ANTHROPIC_ADMIN_KEY', {
        default: null,
        secret: true,
        description:
          "an Anthropic Admin API key (`sk-ant-admin…`): the cost report's `source=billed|all` reads the organization's Usage & Cost API (`/v1/organizations/cost_report`, `/v1/organizations/usage_report/messages`). Unset: Anthropic billing is not read",
      }),
    ),
    anthropicBaseUrl: str('BILLING_ANTHROPIC_BASE_URL', {
      default: 'https://api.anthropic.com',
      check: baseUrl,
      description: "the Anthropic Admin API's origin",
    }),
    openaiAdminKey: nullable(
      str('BILLING_OPENAI_ADMIN_KEY', {
        default: null,
        secret: true,
        description:
          "an OpenAI Admin API key: the cost report's `source=billed|all` reads the organization's costs (`/v1/organization/costs`). Unset: OpenAI billing is not read",
      }),
    ),
    openaiBaseUrl: str('BILLING_OPENAI_BASE_URL', {
      default: 'https://api.openai.com',
      check: baseUrl,
      description: "the OpenAI API's origin (the costs are at `/v1/organization/costs`)",
    }),
    jsonlUrl: nullable(
      str('BILLING_JSONL_URL', {
        default: null,
        check: baseUrl,
        description:
          'a billing export streamed as JSON lines (`application/x-ndjson`, one cost row a line; docs/cost.md): `GET <url>?starting_at&ending_at`. Unset: not read',
      }),
    ),
    jsonlToken: nullable(
      str('BILLING_JSONL_TOKEN', {
        default: null,
        secret: true,
        description: 'sent to `BILLING_JSONL_URL` as `Authorization: Bearer <token>` (unset: none)',
      }),
    ),
    requestTimeoutMs: int('BILLING_REQUEST_TIMEOUT_MS', {
      default: 30_000,
      min: 10,
      max: 600_000,
      description:
        'one billing request (a page, or a whole JSONL stream) before it counts as the provider being unavailable',
    }),
    maxRetries: int('BILLING_MAX_RETRIES', {
      default: 3,
      min: 0,
      max: 10,
      description:
        'retries of a billing request that met provider unavailability (5xx, timeout, refused connection) or a rate limit (429); no other failure is retried',
    }),
    retryBaseMs: int('BILLING_RETRY_BASE_MS', {
      default: 1000,
      min: 1,
      max: 60_000,
      description:
        'first retry delay, doubled each retry; a `retry-after` header longer than the delay is waited instead',
    }),
    retryMaxWaitMs: int('BILLING_RETRY_MAX_WAIT_MS', {
      default: 60_000,
      min: 1,
      max: 600_000,
      description:
        'longest wait before one retry: a provider asking (`retry-after`) for longer fails the dataset at once (rate limit)',
    }),
  }),
});
