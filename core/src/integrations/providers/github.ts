/**
 * The GitHub adapter: a GitHub App, as docs.github.com documents it ("Authenticating as a
 * GitHub App", "Generating a user access token for a GitHub App", "Validating webhook
 * deliveries", the REST installations and issue comments endpoints).
 *
 * Guarantees (each proved in core/test/integrations.github.test.ts, named in quotes, against
 * test/kit/fixtures/githubIntegration.ts, which checks the App JWT as GitHub does):
 * - the App JWT is RS256, iat = now − 60 s, exp = now + 9 min, iss = the App id; the private key
 *   may be PKCS#1 or PKCS#8 ("complete returns the installs…", "deletes the installation at
 *   GitHub (PKCS#8 key)…");
 * - `complete` keeps only installations of this App the user can reach; an `installation_id`
 *   outside them is refused, so no one claims someone else's account ("a forged
 *   installation_id is refused"); a reused code is refused ("a reused code is refused"); no
 *   installation left tells the user where to install the App ("no installation of this App…");
 * - installation tokens are minted once per installation and reused until 5 minutes before
 *   they expire ("mints a token once…", "keeps a token with more than 5 minutes left…"); a 401
 *   drops the token and retries once with a fresh one ("a token GitHub no longer accepts…");
 * - `verify` checks X-Hub-Signature-256 in constant time and never throws ("accepts the
 *   fixture's signature; refuses…");
 * - `parse` never throws, ignores the App's own and other bots' events, cuts texts to
 *   MAX_EVENT_TEXT ("garbage JSON values…", "the App's own comment…", "texts are cut…");
 * - every request goes through ctx.fetch (the fixture's self-signed certificate is trusted only
 *   there); no token or secret is in an error message (`refusal` in the test checks each).
 */
import { createHmac, createPrivateKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { SignJWT } from 'jose';
import {
  IntegrationError,
  MAX_EVENT_TEXT,
  type CompletedInstall,
  type GithubSettings,
  type Headers,
  type InstallCredentials,
  type IntegrationProvider,
  type Parsed,
  type ProviderContext,
  type Trigger,
  type Verified,
} from '../port.js';
import { githubActions, githubSessionResources, githubThread } from './githubActions.js';

/** Mint a new installation token when the cached one expires within this margin. */
const TOKEN_MARGIN_MS = 5 * 60_000;
const API_HEADERS = {
  accept: 'application/vnd.github+json',
  'x-github-api-version': '2022-11-28',
  'user-agent': 'agentfleet',
};
/** Pages of /user/installations read at most (100 per page). */
const MAX_INSTALLATION_PAGES = 10;

type Json = Record<string, unknown>;

const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const obj = (v: unknown): Json => (isObj(v) ? v : {});
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const idOf = (v: unknown): string | null =>
  typeof v === 'number' && Number.isFinite(v)
    ? String(v)
    : typeof v === 'string' && v !== ''
      ? v
      : null;
const header = (h: Headers, name: string): string | null => {
  const v = h[name];
  return typeof v === 'string' ? v : null;
};
const cut = (s: string): string => (s.length > MAX_EVENT_TEXT ? s.slice(0, MAX_EVENT_TEXT) : s);
const escapeRe = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** `@slug` as a whole word (not part of a longer login or an e-mail address), any case. */
export function mentions(text: string, slug: string): boolean {
  return new RegExp(`(?<![\\w@-])@${escapeRe(slug)}(?![\\w-])`, 'i').test(text);
}

export class GithubProvider implements IntegrationProvider {
  readonly id = 'github' as const;
  readonly name = 'GitHub';
  private key: KeyObject | null = null;
  private appSlug: string | null = null;
  private readonly tokens = new Map<string, { token: string; expiresAt: number }>();
  private readonly minting = new Map<string, Promise<string>>();

  constructor(
    private readonly settings: GithubSettings,
    private readonly ctx: ProviderContext,
  ) {}

  missingSettings(): string[] {
    const s = this.settings;
    const names: Array<[string, string | null]> = [
      ['GITHUB_APP_ID', s.appId],
      ['GITHUB_APP_PRIVATE_KEY', s.privateKey],
      ['GITHUB_CLIENT_ID', s.clientId],
      ['GITHUB_CLIENT_SECRET', s.clientSecret],
      ['GITHUB_WEBHOOK_SECRET', s.webhookSecret],
    ];
    return names.filter(([, v]) => v === null).map(([n]) => n);
  }

  authorizeUrl(input: { state: string; redirectUri: string }): string {
    const u = new URL(`${this.settings.webUrl}/login/oauth/authorize`);
    u.searchParams.set('client_id', this.settings.clientId ?? '');
    u.searchParams.set('redirect_uri', input.redirectUri);
    u.searchParams.set('state', input.state);
    return u.href;
  }

  async complete(query: URLSearchParams, redirectUri: string): Promise<CompletedInstall[]> {
    const error = query.get('error');
    if (error)
      throw new IntegrationError(
        `GitHub refused the authorization: ${query.get('error_description') || error}`,
      );
    const code = query.get('code');
    if (!code) throw new IntegrationError('GitHub sent no authorization code');
    this.requireConfigured();

    const exchange = await this.send('POST', `${this.settings.webUrl}/login/oauth/access_token`, {
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_id: this.settings.clientId!,
        client_secret: this.settings.clientSecret!,
        code,
        redirect_uri: redirectUri,
      }).toString(),
    });
    const granted = await this.json(exchange, 'the authorization code exchange');
    if (exchange.status !== 200 || granted.error !== undefined)
      throw new IntegrationError(
        `GitHub refused the authorization code: ${str(granted.error_description) ?? str(granted.error) ?? `HTTP ${exchange.status}`}`,
        exchange.status,
      );
    const userToken = str(granted.access_token);
    if (!userToken) throw new IntegrationError('GitHub returned no user access token');

    const reachable: Json[] = [];
    for (let page = 1; page <= MAX_INSTALLATION_PAGES; page++) {
      const res = await this.api('GET', `/user/installations?per_page=100&page=${page}`, userToken);
      const listed = await this.expect(res, 200, 'listing your installations');
      const batch = Array.isArray(listed.installations) ? listed.installations.filter(isObj) : [];
      reachable.push(...batch);
      const total = typeof listed.total_count === 'number' ? listed.total_count : 0;
      if (batch.length < 100 || reachable.length >= total) break;
    }
    let mine = reachable.filter((i) => idOf(i.app_id) === this.settings.appId);
    const wanted = query.get('installation_id');
    if (wanted !== null) {
      mine = mine.filter((i) => idOf(i.id) === wanted);
      if (mine.length === 0)
        throw new IntegrationError(
          `GitHub installation ${wanted.slice(0, 40)} is not one your GitHub account can reach`,
        );
    }
    const slug = await this.slug();
    if (mine.length === 0)
      throw new IntegrationError(
        `The GitHub App is not installed on any account you can reach: install it first at ${this.settings.webUrl}/apps/${slug}/installations/new`,
      );
    return mine.flatMap((i) => {
      const account = obj(i.account);
      const id = idOf(i.id);
      const accountId = idOf(account.id);
      const login = str(account.login);
      if (!id || !accountId || !login) return [];
      return [
        {
          external_id: id,
          account: { id: accountId, name: login },
          access_token: null,
          refresh_token: null,
          expires_at: null,
          scopes: [],
          data: { account_login: login, account_type: str(account.type) ?? '', app_slug: slug },
        },
      ];
    });
  }

  verify(headers: Headers, raw: Buffer): Verified {
    try {
      const secret = this.settings.webhookSecret;
      if (secret === null) return { ok: false, reason: 'GITHUB_WEBHOOK_SECRET is not set' };
      const sig = headers['x-hub-signature-256'];
      if (sig === undefined) return { ok: false, reason: 'missing X-Hub-Signature-256' };
      if (typeof sig !== 'string' || !/^sha256=[0-9a-f]{64}$/i.test(sig))
        return { ok: false, reason: 'malformed X-Hub-Signature-256' };
      const given = Buffer.from(sig.slice('sha256='.length), 'hex');
      const expected = createHmac('sha256', secret).update(raw).digest();
      if (given.length !== expected.length || !timingSafeEqual(given, expected))
        return { ok: false, reason: 'X-Hub-Signature-256 does not match the body' };
      return { ok: true };
    } catch {
      return { ok: false, reason: 'signature could not be checked' };
    }
  }

  deliveryId(headers: Headers, _body?: unknown): string | null {
    return header(headers, 'x-github-delivery') || null;
  }

  externalIdOf(body: unknown): string | null {
    return isObj(body) ? idOf(obj(body.installation).id) : null;
  }

  parse(headers: Headers, body: unknown, install: InstallCredentials): Parsed {
    try {
      return this.parseEvent(header(headers, 'x-github-event'), body, install);
    } catch {
      return { kind: 'ignored', reason: 'unreadable payload' };
    }
  }

  private parseEvent(event: string | null, body: unknown, install: InstallCredentials): Parsed {
    if (!event) return { kind: 'ignored', reason: 'no X-GitHub-Event header' };
    if (!isObj(body)) return { kind: 'ignored', reason: 'payload is not an object' };
    const externalId = this.externalIdOf(body);
    if (!externalId) return { kind: 'ignored', reason: 'payload names no installation' };
    const action = str(body.action);
    if (event === 'installation')
      return action === 'deleted'
        ? { kind: 'uninstalled', external_id: externalId }
        : { kind: 'ignored', reason: `installation ${action ?? ''} needs nothing` };

    const slug = install.data.app_slug || this.appSlug;
    if (!slug) return { kind: 'ignored', reason: 'the install does not know its app slug' };
    const botLogin = `${slug}[bot]`.toLowerCase();
    const isBot = (u: Json) => u.type === 'Bot' || (str(u.login) ?? '').toLowerCase() === botLogin;
    const sender = obj(body.sender);
    if (isBot(sender)) return { kind: 'ignored', reason: 'sent by a bot' };

    const repository = obj(body.repository);
    const owner = str(obj(repository.owner).login);
    const repo = str(repository.name);
    if (!owner || !repo) return { kind: 'ignored', reason: 'payload names no repository' };

    let item: Json;
    let trigger: Trigger;
    let text: string;
    let author: Json;
    let url: unknown;
    const extraLabels: string[] = [];
    if (event === 'issue_comment') {
      if (action !== 'created') return { kind: 'ignored', reason: `comment ${action ?? ''}` };
      const comment = obj(body.comment);
      author = obj(comment.user);
      if (isBot(author)) return { kind: 'ignored', reason: 'written by a bot' };
      text = str(comment.body) ?? '';
      if (!mentions(text, slug)) return { kind: 'ignored', reason: `no @${slug} mention` };
      item = obj(body.issue);
      trigger = 'mention';
      url = comment.html_url;
    } else if (event === 'issues' || event === 'pull_request') {
      item = obj(event === 'issues' ? body.issue : body.pull_request);
      author = sender;
      text = `${str(item.title) ?? ''}\n\n${str(item.body) ?? ''}`;
      url = item.html_url;
      if (action === 'opened') {
        if (!mentions(str(item.body) ?? '', slug))
          return { kind: 'ignored', reason: `no @${slug} mention` };
        trigger = 'mention';
      } else if (action === 'assigned') {
        if ((str(obj(body.assignee).login) ?? '').toLowerCase() !== botLogin)
          return { kind: 'ignored', reason: 'assigned to someone else' };
        trigger = 'assignment';
      } else if (action === 'labeled') {
        const name = str(obj(body.label).name);
        if (name) extraLabels.push(name);
        trigger = 'label';
      } else return { kind: 'ignored', reason: `${event} ${action ?? ''} starts nothing` };
    } else return { kind: 'ignored', reason: `event ${event} starts nothing` };

    const number = idOf(item.number);
    if (!number || !/^\d+$/.test(number))
      return { kind: 'ignored', reason: 'payload names no issue or pull request' };
    const authorId = idOf(author.id);
    const authorLogin = str(author.login);
    if (!authorId || !authorLogin) return { kind: 'ignored', reason: 'payload names no author' };
    const labels = Array.isArray(item.labels)
      ? item.labels.map((l) => str(obj(l).name)).filter((n): n is string => n !== null)
      : [];
    for (const l of extraLabels) if (!labels.includes(l)) labels.push(l);
    return {
      kind: 'event',
      external_id: externalId,
      workspace: { owner, repo },
      trigger,
      labels,
      thread: {
        key: `${owner}/${repo}#${number}`,
        title: cut(str(item.title) ?? `${owner}/${repo}#${number}`),
        target: { owner, repo, number },
      },
      text: cut(text),
      author: { id: authorId, name: authorLogin },
      url: str(url),
    };
  }

  readonly actions = githubActions((...a) => this.rest(...a));

  sessionResources(target: Record<string, string>, capabilities: readonly string[]): object[] {
    return githubSessionResources(this.settings.webUrl, target, capabilities);
  }

  async reply(install: InstallCredentials, target: Record<string, string>, text: string) {
    const { owner, repo, number } = githubThread(target, 'the reply target');
    const path = `/repos/${owner}/${repo}/issues/${number}/comments`;
    const what = `commenting on ${owner}/${repo}#${number}`;
    await this.rest(install, 'POST', path, { body: text }, 201, what);
  }

  /**
   * One REST call with the installation's token; a 401 drops the token and retries once with a
   * fresh one. Any status but `status` is an IntegrationError with GitHub's message.
   */
  private async rest(
    install: InstallCredentials,
    method: string,
    path: string,
    json: Json | undefined,
    status: number,
    what: string,
  ): Promise<Json> {
    const body = json === undefined ? undefined : JSON.stringify(json);
    let res = await this.api(method, path, await this.installationToken(install.external_id), body);
    if (res.status === 401) {
      await res.body?.cancel();
      this.tokens.delete(install.external_id);
      res = await this.api(method, path, await this.installationToken(install.external_id), body);
    }
    return this.expect(res, status, what);
  }

  async revoke(install: InstallCredentials): Promise<void> {
    const id = install.external_id;
    if (!/^\d+$/.test(id)) throw new IntegrationError('not a GitHub installation id');
    const res = await this.api('DELETE', `/app/installations/${id}`, await this.appJwt());
    this.tokens.delete(id);
    if (res.status === 404) return void (await res.body?.cancel());
    await this.expect(res, 204, `deleting installation ${id}`);
  }

  /**
   * git over HTTPS to a repository of the installation's account on GITHUB_WEB_URL's host: an
   * installation token (the proxy injects it; the sandbox never holds it). Another host or
   * owner: null. Proved by test/e2e/integrations/github-repository.test.ts.
   */
  async repositoryToken(install: InstallCredentials, repo: URL): Promise<string | null> {
    if (repo.host.toLowerCase() !== new URL(this.settings.webUrl).host.toLowerCase()) return null;
    const owner = repo.pathname.split('/').filter(Boolean)[0] ?? '';
    const login = install.data.account_login ?? '';
    if (!owner || owner.toLowerCase() !== login.toLowerCase()) return null;
    return this.installationToken(install.external_id);
  }

  /** An installation token valid for at least 5 more minutes (cached per installation). */
  private async installationToken(installationId: string): Promise<string> {
    if (!/^\d+$/.test(installationId)) throw new IntegrationError('not a GitHub installation id');
    const cached = this.tokens.get(installationId);
    if (cached && cached.expiresAt - TOKEN_MARGIN_MS > this.ctx.now()) return cached.token;
    // concurrent replies of one installation share one mint
    let pending = this.minting.get(installationId);
    if (!pending) {
      pending = this.mint(installationId).finally(() => this.minting.delete(installationId));
      this.minting.set(installationId, pending);
    }
    return pending;
  }

  private async mint(installationId: string): Promise<string> {
    const res = await this.api(
      'POST',
      `/app/installations/${installationId}/access_tokens`,
      await this.appJwt(),
    );
    const minted = await this.expect(
      res,
      201,
      `minting a token for installation ${installationId}`,
    );
    const token = str(minted.token);
    const expiresAt = Date.parse(str(minted.expires_at) ?? '');
    if (!token || !Number.isFinite(expiresAt))
      throw new IntegrationError('GitHub returned no installation token');
    this.tokens.set(installationId, { token, expiresAt });
    return token;
  }

  /** The App's slug from GET /app (fetched once). */
  private async slug(): Promise<string> {
    if (this.appSlug) return this.appSlug;
    const app = await this.expect(
      await this.api('GET', '/app', await this.appJwt()),
      200,
      'reading the App',
    );
    const slug = str(app.slug);
    if (!slug) throw new IntegrationError('GitHub returned no App slug');
    return (this.appSlug = slug);
  }

  private async appJwt(): Promise<string> {
    this.requireConfigured();
    if (!this.key) {
      try {
        this.key = createPrivateKey(this.settings.privateKey!);
      } catch {
        throw new IntegrationError('GITHUB_APP_PRIVATE_KEY is not a PEM private key');
      }
    }
    const now = Math.floor(this.ctx.now() / 1000);
    return new SignJWT({})
      .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
      .setIssuedAt(now - 60)
      .setExpirationTime(now + 9 * 60)
      .setIssuer(this.settings.appId!)
      .sign(this.key);
  }

  private requireConfigured(): void {
    const missing = this.missingSettings().filter((n) => n !== 'GITHUB_WEBHOOK_SECRET');
    if (missing.length)
      throw new IntegrationError(`GitHub is not configured: set ${missing.join(', ')}`);
  }

  private api(method: string, path: string, bearer: string, body?: string): Promise<Response> {
    return this.send(method, `${this.settings.apiUrl}${path}`, {
      headers: {
        ...API_HEADERS,
        authorization: `Bearer ${bearer}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body,
    });
  }

  /** ctx.fetch whose failure names the method and path only (no query, no credentials). */
  private async send(method: string, url: string, init: RequestInit): Promise<Response> {
    try {
      return await this.ctx.fetch(url, { ...init, method, redirect: 'manual' });
    } catch {
      throw new IntegrationError(
        `GitHub could not be reached (${method} ${new URL(url).pathname})`,
      );
    }
  }

  private async json(res: Response, what: string): Promise<Json> {
    let parsed: unknown;
    try {
      parsed = await res.json();
    } catch {
      throw new IntegrationError(
        `GitHub answered ${what} with HTTP ${res.status}, not JSON`,
        res.status,
      );
    }
    return obj(parsed);
  }

  /** The JSON body of a response with status `status`; anything else is an IntegrationError. */
  private async expect(res: Response, status: number, what: string): Promise<Json> {
    if (res.status !== status) {
      let message = '';
      try {
        message = str(obj(await res.json()).message)?.slice(0, 200) ?? '';
      } catch {
        /* no JSON body: the status says it */
      }
      throw new IntegrationError(
        `GitHub refused ${what}: HTTP ${res.status}${message ? ` (${message})` : ''}`,
        res.status,
      );
    }
    if (status === 204) return {};
    return this.json(res, what);
  }
}
