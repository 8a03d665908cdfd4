/**
 * The console's identity providers, through openid-client (a certified relying party; no JWT is
 * checked by hand here):
 * - `oidc`: any OpenID provider, discovered from OIDC_ISSUER; authorization code flow with PKCE
 *   (S256), `state` and `nonce`; the ID token's signature (the provider's JWKS), issuer,
 *   audience and expiry are verified by openid-client; the email comes from the ID token or,
 *   when the provider keeps it out of the token, from the userinfo endpoint (its `sub` must match).
 * - `github`: GitHub's OAuth app flow (PKCE, `state`); the identity is the user's numeric id at
 *   GITHUB_WEB_URL, the email the primary verified one of GET /user/emails.
 * Every request goes through the egress policy with TLS trusting EGRESS_CA_CERTS (`fetch`).
 * Proved by test/e2e/console/console-oidc.test.ts (oidc-provider on 127.0.0.1) and
 * console-github.test.ts (a GitHub fixture speaking its OAuth and REST protocol).
 */
import * as oidc from 'openid-client';
import type { HttpFetch } from '../egress/dispatcher.js';
import { randomToken } from '../crypto.js';

export type ProviderId = 'oidc' | 'github';

export interface IdentityConfig {
  publicUrl: string | null;
  oidc: { issuer: string; clientId: string; clientSecret: string } | null;
  github: { clientId: string; clientSecret: string; webUrl: string; apiUrl: string } | null;
}

/** Who the provider says signed in. `emailVerified` false: the email admits to nothing. */
export interface Identity {
  provider: ProviderId;
  issuer: string;
  subject: string;
  email: string | null;
  emailVerified: boolean;
  name: string;
}

/** One sign-in attempt, kept in the browser's encrypted `af_sign_in` cookie until the callback. */
export interface PendingSignIn {
  id: string;
  provider: ProviderId;
  state: string;
  nonce: string | null;
  verifier: string;
  redirectUri: string;
  /** Where the console goes afterwards (a path under /console/). */
  returnTo: string;
}

/** A sign-in the provider or the checks refused; `message` is safe to show the user. */
export class SignInError extends Error {
  override readonly name = 'SignInError';
}

const GITHUB_SCOPE = 'read:user user:email';
const OIDC_SCOPE = 'openid email profile';

export class IdentityProviders {
  private oidcConfig: Promise<oidc.Configuration> | null = null;

  constructor(
    private readonly cfg: IdentityConfig,
    private readonly fetch: () => Promise<HttpFetch>,
  ) {}

  /** The providers configured, in the order the sign-in page offers them. */
  list(): ProviderId[] {
    return [
      ...(this.cfg.oidc ? (['oidc'] as const) : []),
      ...(this.cfg.github ? (['github'] as const) : []),
    ];
  }

  has(p: string): p is ProviderId {
    return (this.list() as string[]).includes(p);
  }

  /** Builds the provider's authorize URL for a new attempt (`callbackPath` on PUBLIC_URL). */
  async begin(
    provider: ProviderId,
    callbackPath: string,
    returnTo: string,
  ): Promise<{ url: string; pending: PendingSignIn }> {
    const config = await this.configFor(provider);
    const verifier = oidc.randomPKCECodeVerifier();
    const pending: PendingSignIn = {
      id: randomToken(16),
      provider,
      state: oidc.randomState(),
      nonce: provider === 'oidc' ? oidc.randomNonce() : null,
      verifier,
      redirectUri: new URL(callbackPath, this.cfg.publicUrl!).href,
      returnTo,
    };
    const params: Record<string, string> = {
      redirect_uri: pending.redirectUri,
      scope: provider === 'oidc' ? OIDC_SCOPE : GITHUB_SCOPE,
      state: pending.state,
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    };
    if (pending.nonce) params.nonce = pending.nonce;
    return { url: oidc.buildAuthorizationUrl(config, params).href, pending };
  }

  /** Completes an attempt from the callback's query; throws SignInError for anything refused. */
  async complete(pending: PendingSignIn, query: URLSearchParams): Promise<Identity> {
    const config = await this.configFor(pending.provider);
    const current = new URL(pending.redirectUri);
    current.search = query.toString();
    let tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>;
    try {
      tokens = await oidc.authorizationCodeGrant(
        config,
        current,
        {
          pkceCodeVerifier: pending.verifier,
          expectedState: pending.state,
          ...(pending.nonce ? { expectedNonce: pending.nonce, idTokenExpected: true } : {}),
        },
        { redirect_uri: pending.redirectUri },
      );
    } catch (err) {
      throw new SignInError(
        `the identity provider's answer could not be accepted: ${describe(err)}`,
      );
    }
    return pending.provider === 'oidc'
      ? this.oidcIdentity(config, tokens)
      : this.githubIdentity(tokens.access_token);
  }

  private async oidcIdentity(
    config: oidc.Configuration,
    tokens: Awaited<ReturnType<typeof oidc.authorizationCodeGrant>>,
  ): Promise<Identity> {
    const claims = tokens.claims();
    if (!claims) throw new SignInError('the identity provider returned no ID token');
    let info: Record<string, unknown> = claims;
    if (typeof claims.email !== 'string') {
      try {
        info = {
          ...(await oidc.fetchUserInfo(config, tokens.access_token, claims.sub)),
          ...claims,
        };
      } catch (err) {
        throw new SignInError(`the userinfo endpoint's answer was refused: ${describe(err)}`);
      }
    }
    const email = typeof info.email === 'string' ? info.email.toLowerCase() : null;
    return {
      provider: 'oidc',
      issuer: claims.iss,
      subject: claims.sub,
      email,
      emailVerified: info.email_verified === true,
      name: typeof info.name === 'string' ? info.name : (email ?? claims.sub),
    };
  }

  private async githubIdentity(token: string): Promise<Identity> {
    const gh = this.cfg.github!;
    const fetch = await this.fetch();
    const get = async (path: string): Promise<unknown> => {
      let res: Response;
      try {
        res = await fetch(`${gh.apiUrl.replace(/\/$/, '')}${path}`, {
          headers: {
            accept: 'application/vnd.github+json',
            authorization: `Bearer ${token}`,
            'user-agent': 'agentfleet-console',
            'x-github-api-version': '2022-11-28',
          },
          signal: AbortSignal.timeout(15_000),
        });
      } catch (err) {
        throw new SignInError(`GitHub's API is unreachable: ${describe(err)}`);
      }
      if (!res.ok) throw new SignInError(`GitHub's API answered ${res.status} to GET ${path}`);
      return res.json().catch(() => {
        throw new SignInError(`GitHub's API answered GET ${path} with something not JSON`);
      });
    };
    const user = (await get('/user')) as { id?: unknown; login?: unknown; name?: unknown };
    if (typeof user.id !== 'number' || typeof user.login !== 'string')
      throw new SignInError("GitHub's GET /user answer has no id and login");
    const emails = await get('/user/emails');
    const primary = Array.isArray(emails)
      ? (emails as Array<{ email?: unknown; primary?: unknown; verified?: unknown }>).find(
          (e) => e.primary === true && e.verified === true && typeof e.email === 'string',
        )
      : undefined;
    return {
      provider: 'github',
      issuer: new URL(gh.webUrl).origin,
      subject: String(user.id),
      email: primary ? (primary.email as string).toLowerCase() : null,
      emailVerified: !!primary,
      name: typeof user.name === 'string' && user.name ? user.name : user.login,
    };
  }

  private async configFor(provider: ProviderId): Promise<oidc.Configuration> {
    const fetch = await this.fetch();
    const custom: oidc.CustomFetch = (url, o) => fetch(url, o as RequestInit);
    if (provider === 'github') {
      const gh = this.cfg.github!;
      const web = gh.webUrl.replace(/\/$/, '');
      const config = new oidc.Configuration(
        {
          issuer: new URL(web).origin,
          authorization_endpoint: `${web}/login/oauth/authorize`,
          token_endpoint: `${web}/login/oauth/access_token`,
        },
        gh.clientId,
        undefined,
        oidc.ClientSecretPost(gh.clientSecret),
      );
      config[oidc.customFetch] = custom;
      return config;
    }
    const o = this.cfg.oidc!;
    // Discovered once; a failed discovery is tried again by the next sign-in.
    this.oidcConfig ??= oidc
      .discovery(new URL(o.issuer), o.clientId, undefined, oidc.ClientSecretBasic(o.clientSecret), {
        [oidc.customFetch]: custom,
        timeout: 15,
      })
      .catch((err) => {
        this.oidcConfig = null;
        throw new SignInError(
          `the OpenID provider at ${o.issuer} is unavailable: ${describe(err)}`,
        );
      });
    return this.oidcConfig;
  }
}

/** An error's message and its cause's (the egress refusal, the TLS failure), for the page. */
function describe(err: unknown): string {
  const e = err as { message?: string; cause?: { message?: string; code?: string } };
  const cause = e?.cause?.message ?? e?.cause?.code;
  return `${e?.message ?? String(err)}${cause ? ` (${cause})` : ''}`;
}
