/**
 * The Linear adapter: an OAuth2 app installed with `actor=app` (its token acts as the app user
 * of one organization), the GraphQL API at `${apiUrl}/graphql`, and webhooks signed
 * `Linear-Signature` (hex HMAC-SHA256 of the raw body) carrying `webhookTimestamp` (ms) in the
 * body, as linear.app/developers documents ("OAuth 2.0 authentication", "OAuth actor
 * authorization", "Webhooks", "Developing agents").
 *
 * Guarantees (proved in core/test/integrations.linear.test.ts against
 * test/kit/fixtures/linearIntegration.ts):
 * - every request goes through `ctx.fetch` ("authorize → complete", "reply", "revoke");
 * - authorize goes to the web origin derived from apiUrl: a host `api.X` becomes `X`, any other
 *   host keeps apiUrl's origin ("web origin");
 * - `verify` compares the signature with timingSafeEqual over equal-length buffers, refuses a
 *   missing or malformed header, a wrong secret, a changed byte, and a webhookTimestamp more
 *   than 60 s from ctx.now(), naming which; it never throws ("verify");
 * - `parse` never throws for any JSON value ("garbage"); an issue assigned to the app user
 *   (created so, or re-assigned: `updatedFrom` names the previous assignee) is `assignment`, a
 *   new comment mentioning it is `mention`, and Linear's inbox notifications to the app user
 *   (AppUserNotification issueAssignedToYou / issueMention / issueCommentMention) map to the
 *   same triggers; anything the app user did itself is ignored ("parse");
 * - no token or secret is in an error message; Linear's refusals are IntegrationError.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import {
  IntegrationError,
  MAX_EVENT_TEXT,
  type CompletedInstall,
  type Headers,
  type InstallCredentials,
  type IntegrationProvider,
  type LinearSettings,
  type Parsed,
  type ProviderContext,
  type RefreshedTokens,
  type Trigger,
  type Verified,
} from '../port.js';
import { linearActions } from './linearActions.js';

/** Linear documents that a webhookTimestamp older than a minute should be refused. */
const WINDOW_MS = 60_000;
const SCOPES = 'read,write';
const VIEWER_QUERY = 'query { viewer { id name } organization { id name urlKey } }';
const COMMENT_MUTATION =
  'mutation($input: CommentCreateInput!) { commentCreate(input: $input) { success comment { id } } }';

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj | null =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : null;
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const header = (h: Headers, name: string): string | null => {
  const v = h[name];
  return str(Array.isArray(v) ? v[0] : v);
};
const cut = (s: string): string => (s.length > MAX_EVENT_TEXT ? s.slice(0, MAX_EVENT_TEXT) : s);
const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The web origin (authorize page) for an API origin: `api.linear.app` → `linear.app`. */
export function linearWebOrigin(apiUrl: string): string {
  const u = new URL(apiUrl);
  if (!u.hostname.startsWith('api.')) return u.origin;
  return `${u.protocol}//${u.hostname.slice(4)}${u.port ? `:${u.port}` : ''}`;
}

/**
 * Whether `body` mentions the app user: `@name` (case-insensitive, not part of a longer name)
 * or the profile link Linear renders for a mention (`…/profiles/<name>`).
 */
export function mentionsAppUser(body: string, name: string): boolean {
  if (!name) return false;
  const n = escapeRe(name);
  return (
    new RegExp(`(?:^|[^\\w@.-])@${n}(?![\\w-])`, 'iu').test(body) ||
    new RegExp(`https?://[^\\s)\\]]+/profiles/${n}(?![\\w-])`, 'iu').test(body)
  );
}

export class LinearProvider implements IntegrationProvider {
  readonly id = 'linear' as const;
  readonly name = 'Linear';
  private readonly api: string;

  constructor(
    private readonly settings: LinearSettings,
    private readonly ctx: ProviderContext,
  ) {
    this.api = settings.apiUrl.replace(/\/+$/, '');
  }

  missingSettings(): string[] {
    const missing: string[] = [];
    if (!this.settings.clientId) missing.push('LINEAR_CLIENT_ID');
    if (!this.settings.clientSecret) missing.push('LINEAR_CLIENT_SECRET');
    if (!this.settings.webhookSecret) missing.push('LINEAR_WEBHOOK_SECRET');
    return missing;
  }

  authorizeUrl(input: { state: string; redirectUri: string }): string {
    if (!this.settings.clientId) throw new IntegrationError('Linear is not configured');
    const u = new URL('/oauth/authorize', linearWebOrigin(this.api));
    u.search = new URLSearchParams({
      client_id: this.settings.clientId,
      redirect_uri: input.redirectUri,
      response_type: 'code',
      scope: SCOPES,
      state: input.state,
      actor: 'app',
    }).toString();
    return u.href;
  }

  async complete(query: URLSearchParams, redirectUri: string): Promise<CompletedInstall[]> {
    const error = query.get('error');
    if (error)
      throw new IntegrationError(
        `Linear did not authorize the app: ${(query.get('error_description') ?? error).slice(0, 200)}`,
      );
    const code = query.get('code');
    if (!code) throw new IntegrationError('Linear sent no authorization code');
    const { clientId, clientSecret } = this.settings;
    if (!clientId || !clientSecret) throw new IntegrationError('Linear is not configured');

    const res = await this.send(`${this.api}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        client_id: clientId,
        client_secret: clientSecret,
      }).toString(),
    });
    const token = obj(await res.json().catch(() => null));
    if (!res.ok) {
      const why = str(token?.error_description) ?? str(token?.error) ?? `HTTP ${res.status}`;
      throw new IntegrationError(
        `Linear refused the authorization code: ${why.slice(0, 200)}`,
        res.status,
      );
    }
    const accessToken = str(token?.access_token);
    if (!accessToken)
      throw new IntegrationError('Linear answered the code without an access token');
    const expiresIn = token?.expires_in;
    const scope = str(token?.scope) ?? '';

    const data = await this.graphql(accessToken, VIEWER_QUERY, {});
    const viewer = obj(data.viewer);
    const org = obj(data.organization);
    const orgId = str(org?.id);
    const appUserId = str(viewer?.id);
    if (!orgId || !appUserId)
      throw new IntegrationError('Linear did not tell the organization or the app user');
    return [
      {
        external_id: orgId,
        account: { id: orgId, name: str(org?.name) ?? orgId },
        access_token: accessToken,
        refresh_token: str(token?.refresh_token),
        expires_at: this.expiresAt(expiresIn),
        scopes: scope.split(/[,\s]+/).filter(Boolean),
        data: {
          app_user_id: appUserId,
          app_user_name: str(viewer?.name) ?? '',
          organization_url_key: str(org?.urlKey) ?? '',
        },
      },
    ];
  }

  verify(headers: Headers, raw: Buffer): Verified {
    try {
      const secret = this.settings.webhookSecret;
      if (!secret) return { ok: false, reason: 'LINEAR_WEBHOOK_SECRET is not set' };
      const sig = header(headers, 'linear-signature');
      if (!sig) return { ok: false, reason: 'missing Linear-Signature header' };
      if (!/^[0-9a-f]{64}$/i.test(sig))
        return { ok: false, reason: 'malformed Linear-Signature header' };
      const expected = createHmac('sha256', secret).update(raw).digest();
      const given = Buffer.from(sig, 'hex');
      if (given.length !== expected.length || !timingSafeEqual(given, expected))
        return { ok: false, reason: 'Linear-Signature does not match the body' };
      let body: unknown;
      try {
        body = JSON.parse(raw.toString('utf8'));
      } catch {
        return { ok: false, reason: 'body is not JSON' };
      }
      const ts = obj(body)?.webhookTimestamp;
      if (typeof ts !== 'number' || !Number.isFinite(ts))
        return { ok: false, reason: 'missing webhookTimestamp' };
      if (Math.abs(this.ctx.now() - ts) > WINDOW_MS)
        return { ok: false, reason: 'webhookTimestamp is outside the 60 s window' };
      return { ok: true };
    } catch {
      return { ok: false, reason: 'unverifiable request' };
    }
  }

  deliveryId(headers: Headers, body: unknown): string | null {
    const h = header(headers, 'linear-delivery');
    if (h) return h;
    const b = obj(body);
    const hook = str(b?.webhookId);
    const ts = b?.webhookTimestamp;
    return hook && typeof ts === 'number' ? `${hook}:${ts}` : null;
  }

  externalIdOf(body: unknown): string | null {
    return str(obj(body)?.organizationId);
  }

  parse(_headers: Headers, body: unknown, install: InstallCredentials): Parsed {
    try {
      return this.parseBody(body, install);
    } catch {
      return { kind: 'ignored', reason: 'unreadable payload' };
    }
  }

  private parseBody(body: unknown, install: InstallCredentials): Parsed {
    const b = obj(body);
    if (!b) return { kind: 'ignored', reason: 'not an object' };
    const appId = str(install.data?.app_user_id);
    if (!appId) return { kind: 'ignored', reason: 'install has no app user id' };
    const appName = str(install.data?.app_user_name) ?? '';
    const type = str(b.type);
    const action = str(b.action);
    const data = obj(b.data);
    const actor = obj(b.actor);

    if (type === 'AppUserNotification') return this.parseNotification(b, install, appId);
    if (!data) return { kind: 'ignored', reason: `no data in ${type ?? 'event'}` };
    if (str(actor?.id) === appId) return { kind: 'ignored', reason: 'written by the app' };

    if (type === 'Issue' && (action === 'create' || action === 'update')) {
      if (str(data.assigneeId) !== appId)
        return { kind: 'ignored', reason: 'issue not assigned to the app' };
      if (action === 'update') {
        const from = obj(b.updatedFrom);
        if (!from || !('assigneeId' in from) || from.assigneeId === appId)
          return { kind: 'ignored', reason: 'assignee unchanged' };
      }
      const issueId = str(data.id);
      if (!issueId) return { kind: 'ignored', reason: 'issue without id' };
      const title = str(data.title) ?? '';
      return this.event(install, 'assignment', {
        data,
        issueId,
        title,
        text: `${title}\n\n${str(data.description) ?? ''}`,
        author: actor,
        url: str(data.url) ?? str(b.url),
      });
    }

    if (type === 'Comment' && action === 'create') {
      const user = obj(data.user) ?? actor;
      if (str(data.userId) === appId || str(user?.id) === appId)
        return { kind: 'ignored', reason: 'written by the app' };
      const text = str(data.body);
      if (!text || !mentionsAppUser(text, appName))
        return { kind: 'ignored', reason: 'comment does not mention the app' };
      const issue = obj(data.issue);
      const issueId = str(data.issueId) ?? str(issue?.id);
      if (!issueId) return { kind: 'ignored', reason: 'comment without issue' };
      return this.event(install, 'mention', {
        data: { ...issue, ...data },
        issueId,
        title: str(issue?.title) ?? '',
        text,
        author: user,
        url: str(data.url) ?? str(b.url),
      });
    }
    return { kind: 'ignored', reason: `unhandled ${type ?? '?'} ${action ?? '?'}` };
  }

  /** Linear's inbox notifications to the app user ("Developing agents": Inbox notifications). */
  private parseNotification(b: Obj, install: InstallCredentials, appId: string): Parsed {
    const appUser = str(b.appUserId);
    if (appUser && appUser !== appId) return { kind: 'ignored', reason: 'for another app user' };
    const n = obj(b.notification);
    if (!n) return { kind: 'ignored', reason: 'notification without body' };
    const actor = obj(n.actor) ?? (str(n.actorId) ? { id: n.actorId } : null);
    if (str(actor?.id) === appId) return { kind: 'ignored', reason: 'written by the app' };
    const kind = str(n.type) ?? str(b.action);
    const issue = obj(n.issue);
    const issueId = str(n.issueId) ?? str(issue?.id);
    if (!issueId) return { kind: 'ignored', reason: 'notification without issue' };
    const title = str(issue?.title) ?? '';
    const comment = obj(n.comment);
    const url = str(issue?.url);
    const data = issue ?? {};
    if (kind === 'issueAssignedToYou' || kind === 'issueMention') {
      return this.event(install, kind === 'issueMention' ? 'mention' : 'assignment', {
        data,
        issueId,
        title,
        text: `${title}\n\n${str(issue?.description) ?? ''}`,
        author: actor,
        url,
      });
    }
    if (kind === 'issueCommentMention') {
      const text = str(comment?.body);
      if (!text) return { kind: 'ignored', reason: 'mention without comment body' };
      if (str(comment?.userId) === appId) return { kind: 'ignored', reason: 'written by the app' };
      return this.event(install, 'mention', { data, issueId, title, text, author: actor, url });
    }
    return { kind: 'ignored', reason: `unhandled notification ${kind ?? '?'}` };
  }

  private event(
    install: InstallCredentials,
    trigger: Trigger,
    e: {
      data: Obj;
      issueId: string;
      title: string;
      text: string;
      author: Obj | null;
      url: string | null;
    },
  ): Parsed {
    const team = obj(e.data.team);
    const labels = Array.isArray(e.data.labels)
      ? e.data.labels.map((l) => str(obj(l)?.name)).filter((l): l is string => l !== null)
      : [];
    return {
      kind: 'event',
      external_id: install.external_id,
      workspace: {
        team_id: str(e.data.teamId) ?? str(team?.id) ?? '',
        team_key: str(team?.key) ?? '',
      },
      trigger,
      labels,
      thread: { key: e.issueId, title: cut(e.title), target: { issue_id: e.issueId } },
      text: cut(e.text),
      author: {
        id: str(e.author?.id) ?? '',
        name: str(e.author?.name) ?? str(e.author?.displayName) ?? '',
      },
      url: e.url,
    };
  }

  readonly actions = linearActions((install, query, variables) => {
    if (!install.access_token) throw new IntegrationError('Linear install has no access token');
    return this.graphql(install.access_token, query, variables);
  });

  /**
   * New tokens for an install whose access token expires (Linear's OAuth refresh grant; the
   * refresh token rotates: the returned one replaces it). A refusal is an IntegrationError.
   */
  async refresh(install: InstallCredentials): Promise<RefreshedTokens> {
    const { clientId, clientSecret } = this.settings;
    if (!clientId || !clientSecret) throw new IntegrationError('Linear is not configured');
    if (!install.refresh_token) throw new IntegrationError('Linear install has no refresh token');
    const res = await this.send(`${this.api}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: install.refresh_token,
        client_id: clientId,
        client_secret: clientSecret,
      }).toString(),
    });
    const token = obj(await res.json().catch(() => null));
    const accessToken = str(token?.access_token);
    if (!res.ok || !accessToken) {
      const why = str(token?.error_description) ?? str(token?.error) ?? `HTTP ${res.status}`;
      throw new IntegrationError(
        `Linear refused the refresh token: ${why.slice(0, 200)}`,
        res.status,
      );
    }
    return {
      access_token: accessToken,
      refresh_token: str(token?.refresh_token) ?? install.refresh_token,
      expires_at: this.expiresAt(token?.expires_in),
    };
  }

  private expiresAt(expiresIn: unknown): string | null {
    return typeof expiresIn === 'number' && Number.isFinite(expiresIn)
      ? new Date(this.ctx.now() + expiresIn * 1000).toISOString()
      : null;
  }

  async reply(
    install: InstallCredentials,
    target: Record<string, string>,
    text: string,
  ): Promise<void> {
    const issueId = str(target.issue_id);
    if (!issueId) throw new IntegrationError('Linear reply needs an issue id');
    if (!install.access_token) throw new IntegrationError('Linear install has no access token');
    const data = await this.graphql(install.access_token, COMMENT_MUTATION, {
      input: { issueId, body: text },
    });
    if (obj(data.commentCreate)?.success !== true)
      throw new IntegrationError('Linear did not create the comment');
  }

  async revoke(install: InstallCredentials): Promise<void> {
    if (!install.access_token) return;
    const res = await this.send(`${this.api}/oauth/revoke`, {
      method: 'POST',
      headers: { authorization: `Bearer ${install.access_token}` },
    });
    await res.arrayBuffer().catch(() => undefined);
    // Linear answers 400 (or 401) for a token it no longer knows: already revoked is done.
    if (res.ok || res.status === 400 || res.status === 401) return;
    throw new IntegrationError(
      `Linear refused to revoke the token (HTTP ${res.status})`,
      res.status,
    );
  }

  /** One GraphQL call; Linear's `errors` (whatever the status) are an IntegrationError. */
  private async graphql(token: string, query: string, variables: Obj): Promise<Obj> {
    const res = await this.send(`${this.api}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
      body: JSON.stringify({ query, variables }),
    });
    const out = obj(await res.json().catch(() => null));
    const errors = Array.isArray(out?.errors) ? out.errors : [];
    if (errors.length || !res.ok) {
      const why = str(obj(errors[0])?.message) ?? `HTTP ${res.status}`;
      throw new IntegrationError(`Linear refused the request: ${why.slice(0, 200)}`, res.status);
    }
    const data = obj(out?.data);
    if (!data) throw new IntegrationError('Linear answered without data', res.status);
    return data;
  }

  /** `ctx.fetch`, with a transport failure turned into an IntegrationError naming no URL. */
  private async send(url: string, init: RequestInit): Promise<Response> {
    try {
      return await this.ctx.fetch(url, init);
    } catch {
      throw new IntegrationError('Linear could not be reached');
    }
  }
}
