/**
 * The provider port of integrations: what the integration service (./service.ts), the webhook
 * ingest (./ingest.ts) and the conversations (./conversations.ts) ask of one third-party provider. One
 * adapter per provider in ./providers/<id>.ts; each speaks its provider's documented protocol
 * and nothing else:
 * - github: a GitHub App (App JWT RS256 → installation access tokens; the user's OAuth code
 *   tells which installations the installing user can reach), webhooks signed
 *   `X-Hub-Signature-256`;
 * - linear: an OAuth2 app (`actor=app`), GraphQL API, webhooks signed `Linear-Signature` with a
 *   `webhookTimestamp` in the body;
 * - slack: OAuth v2 (a bot token), Web API, Events API signed `v0:{timestamp}:{body}`.
 *
 * Guarantees every adapter gives (proved per adapter by core/test/integrations.<id>.test.ts
 * against the fixture server test/kit/fixtures/<id>Integration.ts):
 * - every outbound request goes through `ctx.fetch` (the egress policy; TLS trusting
 *   EGRESS_CA_CERTS), never global fetch;
 * - `verify` compares signatures in constant time (crypto.timingSafeEqual over equal-length
 *   buffers), refuses a missing or malformed signature header, and refuses a timestamp outside
 *   the provider's window; it never throws;
 * - `parse` never throws for any JSON value (unknown shapes are `ignored`); texts are cut to
 *   MAX_EVENT_TEXT characters; events written by the app itself are `ignored` (no reply loops);
 * - no token or secret is ever in a thrown error's message, a returned value other than
 *   CompletedInstall's token fields, or a log line;
 * - a provider's refusal is an IntegrationError (never a raw fetch error with a URL holding a
 *   secret).
 */
import type { HttpFetch } from '../egress/dispatcher.js';

export const INTEGRATION_IDS = ['github', 'linear', 'slack'] as const;
export type IntegrationId = (typeof INTEGRATION_IDS)[number];

/** Each integration's inbound webhook path under `/v1/svc/integrations/<id>/` (Slack's Events API: `events`). */
export const WEBHOOK_PATHS: Readonly<Record<IntegrationId, string>> = {
  github: 'webhook',
  linear: 'webhook',
  slack: 'events',
};

/** Longest event text handed to an agent (characters); longer is cut. */
export const MAX_EVENT_TEXT = 16_000;

export interface ProviderContext {
  /** HTTP under the egress policy (private hosts only through EGRESS_ALLOW_PRIVATE_HOSTS). */
  fetch: HttpFetch;
  /** Milliseconds since the epoch (tests move it). */
  now: () => number;
}

export interface GithubSettings {
  appId: string | null;
  /** PEM (PKCS#1 or PKCS#8) RSA private key of the App. */
  privateKey: string | null;
  clientId: string | null;
  clientSecret: string | null;
  webhookSecret: string | null;
  /** REST base, e.g. https://api.github.com or https://HOST/api/v3. */
  apiUrl: string;
  /** Web origin, e.g. https://github.com (OAuth authorize and token endpoints). */
  webUrl: string;
}

export interface LinearSettings {
  clientId: string | null;
  clientSecret: string | null;
  webhookSecret: string | null;
  /** API origin, e.g. https://api.linear.app (GraphQL at /graphql, /oauth/token, /oauth/revoke). */
  apiUrl: string;
}

export interface SlackSettings {
  clientId: string | null;
  clientSecret: string | null;
  signingSecret: string | null;
  /** Web API base, e.g. https://slack.com/api (methods at `${apiUrl}/<method>`). */
  apiUrl: string;
}

/** What the OAuth callback yields: one install per provider account reached. */
export interface CompletedInstall {
  /** The provider's id of the account: GitHub installation id, Linear organization id, Slack team id. */
  external_id: string;
  /** The account as people know it (GitHub org/user login, Linear organization, Slack team). */
  account: { id: string; name: string };
  /** The provider token to keep (sealed by the caller); GitHub: null (minted per use from the App JWT). */
  access_token: string | null;
  refresh_token: string | null;
  /** ISO time the access token expires, or null. */
  expires_at: string | null;
  scopes: string[];
  /**
   * Provider specifics the adapter needs later (never secret): GitHub {account_login,
   * account_type}; Linear {app_user_id, organization_url_key}; Slack {bot_user_id, app_id}.
   */
  data: Record<string, string>;
}

/** What a refresh grant yields (the caller seals and stores it in place of the old tokens). */
export interface RefreshedTokens {
  access_token: string;
  refresh_token: string | null;
  expires_at: string | null;
}

/** One install as the adapter receives it back, tokens unsealed. */
export interface InstallCredentials {
  external_id: string;
  access_token: string | null;
  refresh_token: string | null;
  data: Record<string, string>;
}

export type Trigger = 'mention' | 'assignment' | 'label' | 'direct_message';

/** An event that may start or continue a session. */
export interface InboundEvent {
  kind: 'event';
  external_id: string;
  /**
   * Where it happened, matched against a publication's `workspace` (every key a publication
   * names must be equal here): GitHub {owner, repo}; Linear {team_id, team_key}; Slack
   * {channel, channel_type}.
   */
  workspace: Record<string, string>;
  trigger: Trigger;
  /** Labels on the issue/PR (GitHub, Linear); [] where the provider has none. */
  labels: string[];
  thread: {
    /**
     * Stable per conversation: GitHub `owner/repo#number`; Linear the issue id; Slack
     * `channel:thread_ts` (the root message's ts when the message starts a thread).
     */
    key: string;
    /** A human title for the session (issue title, first line of the message). */
    title: string;
    /** What `reply` needs to answer in this thread (ids only, no tokens). */
    target: Record<string, string>;
  };
  /** The message for the agent: what the person wrote (and, on a new issue, its title/body). */
  text: string;
  author: { id: string; name: string };
  /** A link people can open, or null. */
  url: string | null;
}

/**
 * Something the agent may do back in its thread beyond `reply`, enabled by a publication
 * capability of the same name and offered to the agent as a tool of its turn (the control plane
 * runs it with the install's token; ./actions.ts).
 */
export interface ProviderAction {
  /** The publication capability that enables it (e.g. `pull_request`). */
  readonly capability: string;
  /** The bare tool name (the turn offers it as `mcp__<integration>_integration__<tool>`). */
  readonly tool: string;
  readonly description: string;
  /** JSON Schema of the tool's input (`type: 'object'`). */
  readonly input_schema: Record<string, unknown>;
  /**
   * Runs it in the thread `target`; the text is the tool's result. A bad input or a provider
   * refusal is an IntegrationError whose message is fit for the agent (the call's is_error
   * result); no token in either.
   */
  run(
    install: InstallCredentials,
    target: Record<string, string>,
    input: Record<string, unknown>,
  ): Promise<string>;
}

export type Verified = { ok: true } | { ok: false; reason: string };

export type Parsed =
  | InboundEvent
  /** Answer the request with exactly this JSON and do nothing else (Slack url_verification). */
  | { kind: 'challenge'; response: Record<string, string> }
  /** The provider says the app was removed from this account. */
  | { kind: 'uninstalled'; external_id: string }
  | { kind: 'ignored'; reason: string };

/** Headers as node gives them: lower-case names. */
export type Headers = Record<string, string | string[] | undefined>;

export class IntegrationError extends Error {
  constructor(
    message: string,
    /** The provider's HTTP status, when it answered. */
    readonly status: number | null = null,
  ) {
    super(message);
  }
}

export interface IntegrationProvider {
  readonly id: IntegrationId;
  /** Display name: GitHub, Linear, Slack. */
  readonly name: string;
  /** The environment variable names install needs that are unset (empty: configured). */
  missingSettings(): string[];
  /** The provider's authorize URL the user is sent to; `state` is opaque to the adapter. */
  authorizeUrl(input: { state: string; redirectUri: string }): string;
  /**
   * The OAuth callback's query (state already checked by the caller): exchange the code and
   * return the installs it grants. A refusal (no code, error=…, a code the provider rejects,
   * no installation reachable) is an IntegrationError with a message fit for the user.
   */
  complete(query: URLSearchParams, redirectUri: string): Promise<CompletedInstall[]>;
  /** Check a webhook request's signature (and timestamp window) over its raw body. */
  verify(headers: Headers, raw: Buffer): Verified;
  /** The delivery's id for de-duplication (GitHub X-GitHub-Delivery, Linear Linear-Delivery or webhookId+timestamp, Slack event_id); null when absent. */
  deliveryId(headers: Headers, body: unknown): string | null;
  /** The account a verified body belongs to (installation id / organizationId / team_id), or null. */
  externalIdOf(body: unknown): string | null;
  /** A verified body, for the install it belongs to (its data tells the app's own identity). */
  parse(headers: Headers, body: unknown, install: InstallCredentials): Parsed;
  /** Post `text` as the app's answer in the thread `target` (a comment, a thread reply). */
  reply(install: InstallCredentials, target: Record<string, string>, text: string): Promise<void>;
  /** What the agent may do beyond `reply`, each behind its own publication capability. */
  readonly actions: readonly ProviderAction[];
  /**
   * Resources a session started for thread `target` gets with these capabilities (GitHub with
   * `pull_request`: the event's repository, so the agent can push a branch), or none.
   */
  sessionResources?(target: Record<string, string>, capabilities: readonly string[]): object[];
  /**
   * Present where the provider's access tokens expire (Linear): new tokens from the refresh
   * token. The service refreshes 5 minutes before `expires_at`, and once on a 401.
   */
  refresh?(install: InstallCredentials): Promise<RefreshedTokens>;
  /** Revoke at the provider (GitHub: delete the installation; Linear/Slack: revoke the token). */
  revoke(install: InstallCredentials): Promise<void>;
  /**
   * A code host's token for git over HTTPS to `repo` when this install covers it (GitHub: the
   * installation's account owns the repository on GITHUB_WEB_URL's host), else null. Absent
   * for providers that host no repositories.
   */
  repositoryToken?(install: InstallCredentials, repo: URL): Promise<string | null>;
}
