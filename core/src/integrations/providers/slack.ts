/**
 * The Slack adapter of the provider port (../port.ts): a Slack app installed by OAuth v2 (a bot
 * token), answering through the Web API and woken by the Events API. It speaks Slack's
 * documented protocol only:
 * - install: `/oauth/v2/authorize` on the origin of `apiUrl`, then `oauth.v2.access` with the
 *   client credentials as HTTP Basic auth (Slack's preferred form); token rotation's
 *   `refresh_token`/`expires_in` are kept when Slack sends them;
 * - events: "Verifying requests from Slack" (`v0=` HMAC-SHA256 over `v0:{timestamp}:{body}`,
 *   timestamp within 5 minutes either way), `url_verification`, `event_callback` with
 *   `app_mention`, `message` in an IM, `app_uninstalled`, `tokens_revoked`;
 * - answers: `chat.postMessage` in the thread; removal: `auth.revoke`.
 *
 * Guarantees (proved by core/test/integrations.slack.test.ts against
 * test/kit/fixtures/slackIntegration.ts):
 * - every request goes through `ctx.fetch` ("every request goes through ctx.fetch: a policy
 *   without the opened host refuses it");
 * - `verify` compares in constant time and names why it refuses (wrong secret, changed body,
 *   missing or malformed headers, a timestamp 6 minutes old or ahead); it never throws
 *   ("verify …" tests);
 * - `parse` never throws and ignores what the app wrote itself (bot_id, its own user) and
 *   edits/joins (any subtype) ("what the app wrote, edits and channel messages without a
 *   mention are ignored", "garbage values are ignored without throwing");
 * - a refusal is an IntegrationError carrying Slack's error code only, never a token or secret
 *   ("a reused code is refused", "access_denied is refused", "revoke …").
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  IntegrationError,
  MAX_EVENT_TEXT,
  type CompletedInstall,
  type Headers,
  type InstallCredentials,
  type IntegrationProvider,
  type Parsed,
  type ProviderContext,
  type SlackSettings,
  type Verified,
} from '../port.js';

/** Bot scopes the app asks for: read its mentions, write answers, read its DMs. */
export const SLACK_SCOPES = ['app_mentions:read', 'chat:write', 'im:history'] as const;

/** Slack's replay window for signed requests (seconds, either direction). */
const TIMESTAMP_WINDOW_S = 5 * 60;

/** Longest thread title (characters). */
const MAX_TITLE = 80;

/** auth.revoke answers that mean the token no longer works: nothing left to revoke. */
const ALREADY_REVOKED = new Set(['invalid_auth', 'token_revoked', 'account_inactive']);

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** One header value; a repeated header counts as absent-or-malformed (null). */
function header(headers: Headers, name: string): string | null {
  const v = headers[name];
  return typeof v === 'string' ? v : null;
}

/** Slack's error code, reduced to a safe token (it is shown to the user). */
function slackCode(v: unknown): string {
  return typeof v === 'string' && /^[a-z0-9_.]{1,64}$/.test(v) ? v : 'unknown_error';
}

/** `text` without the app's own mention (`<@BOTID>` or `<@BOTID|name>`). */
function withoutMention(text: string, botUserId: string | null): string {
  if (!botUserId) return text;
  const id = botUserId.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return text.replace(new RegExp(`<@${id}(?:\\|[^>]*)?>`, 'g'), '');
}

export class SlackProvider implements IntegrationProvider {
  readonly id = 'slack' as const;
  readonly name = 'Slack';
  readonly actions = [];

  constructor(
    private readonly settings: SlackSettings,
    private readonly ctx: ProviderContext,
  ) {}

  missingSettings(): string[] {
    const missing: string[] = [];
    if (this.settings.clientId === null) missing.push('SLACK_CLIENT_ID');
    if (this.settings.clientSecret === null) missing.push('SLACK_CLIENT_SECRET');
    if (this.settings.signingSecret === null) missing.push('SLACK_SIGNING_SECRET');
    return missing;
  }

  authorizeUrl(input: { state: string; redirectUri: string }): string {
    if (this.settings.clientId === null)
      throw new IntegrationError('Slack is not configured: SLACK_CLIENT_ID is unset');
    const url = new URL('/oauth/v2/authorize', new URL(this.settings.apiUrl).origin);
    url.searchParams.set('client_id', this.settings.clientId);
    url.searchParams.set('scope', SLACK_SCOPES.join(','));
    url.searchParams.set('redirect_uri', input.redirectUri);
    url.searchParams.set('state', input.state);
    return url.href;
  }

  async complete(query: URLSearchParams, redirectUri: string): Promise<CompletedInstall[]> {
    const error = query.get('error');
    if (error !== null)
      throw new IntegrationError(`Slack did not grant the install (${slackCode(error)})`);
    const code = query.get('code');
    if (!code) throw new IntegrationError('Slack sent no authorization code');
    const { clientId, clientSecret } = this.settings;
    if (clientId === null || clientSecret === null)
      throw new IntegrationError(
        'Slack is not configured: SLACK_CLIENT_ID and SLACK_CLIENT_SECRET are required',
      );
    const basic = Buffer.from(
      `${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`,
    ).toString('base64');
    const body = await this.call('oauth.v2.access', {
      method: 'POST',
      headers: {
        authorization: `Basic ${basic}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: new URLSearchParams({ code, redirect_uri: redirectUri }).toString(),
    });
    if (body.ok !== true)
      throw new IntegrationError(`Slack refused the install (${slackCode(body.error)})`);
    const token = str(body.access_token);
    const team = isObject(body.team) ? body.team : null;
    const teamId = team ? str(team.id) : null;
    if (!token || !teamId)
      throw new IntegrationError(
        'Slack granted no workspace bot token (organization-wide installs are not supported)',
      );
    const expiresIn = typeof body.expires_in === 'number' ? body.expires_in : null;
    const data: Record<string, string> = {};
    const botUserId = str(body.bot_user_id);
    const appId = str(body.app_id);
    if (botUserId) data.bot_user_id = botUserId;
    if (appId) data.app_id = appId;
    return [
      {
        external_id: teamId,
        account: { id: teamId, name: str(team!.name) ?? teamId },
        access_token: token,
        refresh_token: str(body.refresh_token),
        expires_at:
          expiresIn !== null && Number.isFinite(expiresIn) && expiresIn > 0
            ? new Date(this.ctx.now() + expiresIn * 1000).toISOString()
            : null,
        scopes: (str(body.scope) ?? '').split(',').filter(Boolean),
        data,
      },
    ];
  }

  verify(headers: Headers, raw: Buffer): Verified {
    try {
      const secret = this.settings.signingSecret;
      if (secret === null) return { ok: false, reason: 'SLACK_SIGNING_SECRET is not set' };
      const ts = header(headers, 'x-slack-request-timestamp');
      const sig = header(headers, 'x-slack-signature');
      if (ts === null) return { ok: false, reason: 'missing X-Slack-Request-Timestamp' };
      if (sig === null) return { ok: false, reason: 'missing X-Slack-Signature' };
      if (!/^\d{1,12}$/.test(ts))
        return { ok: false, reason: 'malformed X-Slack-Request-Timestamp' };
      if (!/^v0=[0-9a-f]{64}$/.test(sig))
        return { ok: false, reason: 'malformed X-Slack-Signature' };
      const skew = Math.abs(this.ctx.now() / 1000 - Number(ts));
      if (!(skew <= TIMESTAMP_WINDOW_S))
        return { ok: false, reason: 'X-Slack-Request-Timestamp is outside the 5-minute window' };
      const expected = Buffer.from(
        'v0=' + createHmac('sha256', secret).update(`v0:${ts}:`).update(raw).digest('hex'),
      );
      const given = Buffer.from(sig);
      if (given.length !== expected.length || !timingSafeEqual(given, expected))
        return { ok: false, reason: 'X-Slack-Signature does not match' };
      return { ok: true };
    } catch {
      return { ok: false, reason: 'the request could not be verified' };
    }
  }

  deliveryId(_headers: Headers, body: unknown): string | null {
    if (!isObject(body) || body.type !== 'event_callback') return null;
    return str(body.event_id);
  }

  externalIdOf(body: unknown): string | null {
    if (!isObject(body)) return null;
    const direct = str(body.team_id);
    if (direct) return direct;
    const auths = body.authorizations;
    if (Array.isArray(auths) && isObject(auths[0])) return str(auths[0].team_id);
    return null;
  }

  parse(_headers: Headers, body: unknown, install: InstallCredentials): Parsed {
    try {
      return this.parseBody(body, install);
    } catch {
      return { kind: 'ignored', reason: 'unreadable Slack payload' };
    }
  }

  private parseBody(body: unknown, install: InstallCredentials): Parsed {
    if (!isObject(body)) return { kind: 'ignored', reason: 'not a Slack payload' };
    if (body.type === 'url_verification') {
      const challenge = str(body.challenge);
      return challenge
        ? { kind: 'challenge', response: { challenge } }
        : { kind: 'ignored', reason: 'url_verification without a challenge' };
    }
    if (body.type !== 'event_callback' || !isObject(body.event))
      return { kind: 'ignored', reason: `Slack payload type ${String(body.type)} is not handled` };
    const event = body.event;
    const externalId = this.externalIdOf(body) ?? install.external_id;
    const botUserId = install.data.bot_user_id ?? null;

    if (event.type === 'app_uninstalled') return { kind: 'uninstalled', external_id: externalId };
    if (event.type === 'tokens_revoked') {
      const bots = isObject(event.tokens) ? event.tokens.bot : null;
      const forBot =
        Array.isArray(bots) && bots.length > 0 && (!botUserId || bots.includes(botUserId));
      return forBot
        ? { kind: 'uninstalled', external_id: externalId }
        : { kind: 'ignored', reason: 'tokens_revoked for user tokens only' };
    }

    let trigger: 'mention' | 'direct_message';
    if (event.type === 'app_mention') trigger = 'mention';
    else if (event.type === 'message' && event.channel_type === 'im') trigger = 'direct_message';
    else if (event.type === 'message')
      return { kind: 'ignored', reason: 'a channel message without a mention' };
    else return { kind: 'ignored', reason: `Slack event ${String(event.type)} is not handled` };

    if (event.bot_id !== undefined && event.bot_id !== null)
      return { kind: 'ignored', reason: 'written by a bot' };
    if (event.subtype !== undefined && event.subtype !== null)
      return { kind: 'ignored', reason: `message subtype ${String(event.subtype)}` };
    const user = str(event.user);
    const channel = str(event.channel);
    const ts = str(event.ts);
    if (!user || !channel || !ts)
      return { kind: 'ignored', reason: 'Slack event without user, channel or ts' };
    if (botUserId && user === botUserId) return { kind: 'ignored', reason: 'written by the app' };

    const rawText = typeof event.text === 'string' ? event.text : '';
    const text = withoutMention(rawText, botUserId).trim().slice(0, MAX_EVENT_TEXT);
    const threadTs = str(event.thread_ts) ?? ts;
    const firstLine = text.split('\n', 1)[0].trim();
    return {
      kind: 'event',
      external_id: externalId,
      workspace: {
        channel,
        channel_type: str(event.channel_type) ?? (trigger === 'mention' ? 'channel' : 'im'),
      },
      trigger,
      labels: [],
      thread: {
        key: `${channel}:${threadTs}`,
        title: (firstLine || 'Slack message').slice(0, MAX_TITLE),
        target: { channel, thread_ts: threadTs },
      },
      text,
      author: { id: user, name: user },
      url: null,
    };
  }

  async reply(
    install: InstallCredentials,
    target: Record<string, string>,
    text: string,
  ): Promise<void> {
    const channel = str(target.channel);
    if (!channel) throw new IntegrationError('Slack reply target has no channel');
    const token = install.access_token;
    if (!token) throw new IntegrationError('this Slack install has no bot token');
    const payload: Json = { channel, text };
    if (str(target.thread_ts)) payload.thread_ts = target.thread_ts;
    const body = await this.call('chat.postMessage', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json; charset=utf-8',
      },
      body: JSON.stringify(payload),
    });
    if (body.ok !== true)
      throw new IntegrationError(`Slack refused the message (${slackCode(body.error)})`);
  }

  async revoke(install: InstallCredentials): Promise<void> {
    const token = install.access_token;
    if (!token) return;
    const body = await this.call('auth.revoke', {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: '',
    });
    if (body.ok === true || ALREADY_REVOKED.has(slackCode(body.error))) return;
    throw new IntegrationError(`Slack refused to revoke the token (${slackCode(body.error)})`);
  }

  /**
   * One Web API call through `ctx.fetch`: the JSON object Slack answered. A network failure,
   * a non-2xx status or a body that is not a JSON object is an IntegrationError naming the
   * method only (the egress refusal, if any, stays reachable as its `cause`).
   */
  private async call(method: string, init: RequestInit): Promise<Json> {
    const url = `${this.settings.apiUrl.replace(/\/+$/, '')}/${method}`;
    let res: Response;
    try {
      res = await this.ctx.fetch(url, { ...init, redirect: 'error' });
    } catch (err) {
      const e = new IntegrationError(`Slack could not be reached (${method})`);
      e.cause = err;
      throw e;
    }
    const raw = await res.text().catch(() => '');
    if (!res.ok)
      throw new IntegrationError(`Slack answered HTTP ${res.status} to ${method}`, res.status);
    let body: unknown;
    try {
      body = JSON.parse(raw);
    } catch {
      body = null;
    }
    if (!isObject(body))
      throw new IntegrationError(`Slack answered ${method} with no JSON object`, res.status);
    return body;
  }
}
