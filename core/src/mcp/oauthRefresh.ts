/**
 * The spec's "MCP proxy 401 flow" for `mcp_oauth` credentials, shared by the MCP proxy
 * (./proxy.ts) and `mcp_oauth_validate` (./validate.ts). Guarantees:
 * - the credential is re-read from the store first; when its access_token has moved past the
 *   stale one (a rotation through update, or another caller's refresh), the live token is used
 *   and the token endpoint is not called;
 * - otherwise the token endpoint gets `grant_type=refresh_token`, the refresh_token, and the
 *   client authentication the credential configures: `none` (client_id in the body),
 *   `client_secret_basic` (HTTP Basic, RFC 6749 2.3.1 form-encoding), `client_secret_post`
 *   (client_id and client_secret in the body); plus `resource` and `scope` when set. The
 *   request goes through the egress policy like every other upstream call;
 * - the rotated `{access_token, refresh_token (when returned), expires_at (from expires_in)}`
 *   is persisted sealed before it is used;
 * - concurrent refreshes of one credential collapse to one, across processes: the refresher
 *   holds the coordination lease `mcp-oauth-refresh:<credential id>` (Redis in fleet mode);
 *   a caller that finds it held waits (bounded) and re-reads the credential instead;
 * - every attempt's outcome is recorded on the credential (SDK BetaManagedAgentsRefreshObject),
 *   with a scrubbed excerpt of a failed answer, and logged without any token.
 * Proved by test/e2e/mcp/mcp-proxy-oauth.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { VaultService, ResolvedCredential } from '../vaults/vaults.js';
import type { HttpFetch } from '../egress/dispatcher.js';
import type { Logger } from '../log.js';
import type { LeaseStore } from '../coordination/port.js';
import { captureResponse } from './oauthScrub.js';
import type { RefreshRecord } from './oauthTypes.js';

export interface RefreshConfig {
  client_id: string;
  token_endpoint: string;
  token_endpoint_auth: { type: 'none' | 'client_secret_basic' | 'client_secret_post' };
  resource: string | null;
  scope: string | null;
}

/** A usable access token, or why there is none (the refresh outcome, null when none ran). */
export type RenewResult =
  | { ok: true; accessToken: string; refreshed: boolean; refresh: RefreshRecord | null }
  | { ok: false; refresh: RefreshRecord | null; reason: string };

export interface OAuthRefresherOptions {
  /** Lease TTL: longer than one token endpoint round trip. Default 30 s. */
  leaseTtlMs?: number;
  /** How long a caller waits for another holder's refresh. Default 20 s. */
  waitMs?: number;
  /** Token endpoint timeout. Default 15 s. */
  timeoutMs?: number;
}

const form = (v: string) => encodeURIComponent(v).replace(/%20/g, '+');

/** The token endpoint request for `cred` (its body and headers hold secrets: never logged). */
export function refreshRequest(cred: ResolvedCredential): { url: string; init: RequestInit } {
  const r = cred.auth.refresh as RefreshConfig;
  const body = new URLSearchParams({
    grant_type: 'refresh_token',
    refresh_token: cred.secrets.refresh_token ?? '',
  });
  const headers: Record<string, string> = {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  };
  const auth = r.token_endpoint_auth.type;
  if (auth === 'client_secret_basic') {
    const basic = `${form(r.client_id)}:${form(cred.secrets.client_secret ?? '')}`;
    headers.authorization = `Basic ${Buffer.from(basic).toString('base64')}`;
  } else body.set('client_id', r.client_id);
  if (auth === 'client_secret_post') body.set('client_secret', cred.secrets.client_secret ?? '');
  if (r.resource) body.set('resource', r.resource);
  if (r.scope) body.set('scope', r.scope);
  return { url: r.token_endpoint, init: { method: 'POST', headers, body: body.toString() } };
}

const secretsOf = (c: ResolvedCredential) => [
  c.secrets.access_token,
  c.secrets.refresh_token,
  c.secrets.client_secret,
];

export class OAuthRefresher {
  private readonly leaseTtlMs: number;
  private readonly waitMs: number;
  private readonly timeoutMs: number;

  constructor(
    private readonly vaults: VaultService,
    private readonly leases: LeaseStore,
    private readonly fetch: () => Promise<HttpFetch>,
    private readonly log: Logger,
    opts: OAuthRefresherOptions = {},
  ) {
    this.leaseTtlMs = opts.leaseTtlMs ?? 30_000;
    this.waitMs = opts.waitMs ?? 20_000;
    this.timeoutMs = opts.timeoutMs ?? 15_000;
  }

  /**
   * After the upstream refused `staleAccess` (401/403): the live token if the credential moved
   * on, else a refreshed one; `ok: false` when neither is available (the caller then answers
   * the original refusal).
   */
  async renew(tenant: string, credentialId: string, staleAccess: string): Promise<RenewResult> {
    const key = `mcp-oauth-refresh:${credentialId}`;
    const gone: RenewResult = { ok: false, refresh: null, reason: 'credential gone or archived' };
    /** The live token when the credential moved past the stale one, else null. */
    const movedOn = (c: ResolvedCredential | null) =>
      c?.secrets.access_token && c.secrets.access_token !== staleAccess
        ? ({
            ok: true,
            accessToken: c.secrets.access_token,
            refreshed: false,
            refresh: null,
          } as const)
        : null;
    const live = await this.vaults.credentialLive(tenant, credentialId);
    if (!live) return gone;
    const now = movedOn(live);
    if (now) return now;
    const lease = await this.leases.acquire(key, `${process.pid}:${randomUUID()}`, this.leaseTtlMs);
    if (lease) {
      try {
        // Another process may have finished its refresh between our read and our lease.
        const again = await this.vaults.credentialLive(tenant, credentialId);
        if (!again) return gone;
        return movedOn(again) ?? (await this.refresh(tenant, again));
      } finally {
        await this.leases.release(lease).catch(() => {});
      }
    }
    // Someone else is refreshing: wait (bounded) for the lease to go, then re-read; never
    // refresh a second time.
    const deadline = Date.now() + this.waitMs;
    while ((await this.leases.holder(key)) && Date.now() < deadline) await sleep(50);
    const after = movedOn(await this.vaults.credentialLive(tenant, credentialId));
    if (after) return after;
    return {
      ok: false,
      refresh: null,
      reason:
        Date.now() >= deadline
          ? 'another refresh of this credential is still running'
          : "another caller's refresh did not succeed",
    };
  }

  /** One token endpoint exchange for `cred` (lease held), persisted and recorded. */
  private async refresh(tenant: string, cred: ResolvedCredential): Promise<RenewResult> {
    const r = cred.auth.refresh as RefreshConfig | null;
    const record = async (outcome: RefreshRecord, reason: string): Promise<RenewResult> => {
      await this.vaults.recordRefreshOutcome(tenant, cred.credential_id, outcome);
      this.log.warn('mcp_oauth refresh failed', {
        op: 'mcp_oauth.refresh',
        tenant_id: tenant,
        credential_id: cred.credential_id,
        status: outcome.status,
        http_status: outcome.http_response?.status_code ?? null,
        reason,
      });
      return { ok: false, refresh: outcome, reason };
    };
    if (!r || !cred.secrets.refresh_token)
      return record({ status: 'no_refresh_token', http_response: null }, 'no refresh token');
    const { url, init } = refreshRequest(cred);
    let res: Response;
    try {
      const f = await this.fetch();
      res = await f(url, { ...init, signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      const why = (err as Error)?.cause ?? err;
      return record(
        { status: 'connect_error', http_response: null },
        `token endpoint unreachable: ${String((why as Error)?.message ?? why).slice(0, 200)}`,
      );
    }
    const failed = async (reason: string) =>
      record(
        { status: 'failed', http_response: await captureResponse(res, secretsOf(cred)) },
        reason,
      );
    if (!res.ok) return failed(`token endpoint answered ${res.status}`);
    let tokens: { access_token?: unknown; refresh_token?: unknown; expires_in?: unknown };
    try {
      tokens = (await res.clone().json()) as typeof tokens;
    } catch {
      return failed('token endpoint answered no JSON');
    }
    if (typeof tokens?.access_token !== 'string' || !tokens.access_token)
      return failed('token endpoint answered no access_token');
    await res.body?.cancel().catch(() => {});
    const expiresIn = Number(tokens.expires_in);
    await this.vaults.storeRefreshedTokens(tenant, cred.credential_id, {
      access_token: tokens.access_token,
      ...(typeof tokens.refresh_token === 'string' && tokens.refresh_token
        ? { refresh_token: tokens.refresh_token }
        : {}),
      expires_at:
        Number.isFinite(expiresIn) && expiresIn > 0
          ? new Date(Date.now() + expiresIn * 1000).toISOString()
          : null,
    });
    const outcome: RefreshRecord = { status: 'succeeded', http_response: null };
    await this.vaults.recordRefreshOutcome(tenant, cred.credential_id, outcome);
    this.log.info('mcp_oauth refreshed', {
      op: 'mcp_oauth.refresh',
      tenant_id: tenant,
      credential_id: cred.credential_id,
      status: 'succeeded',
    });
    return { ok: true, accessToken: tokens.access_token, refreshed: true, refresh: outcome };
  }
}
