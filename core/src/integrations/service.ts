/**
 * Integrations as the API serves them: the shipped integrations and a tenant's installs
 * (`GET /v1/svc/integrations`), install by OAuth (`…/:id/install` → the provider's authorize URL,
 * `…/:id/callback` ← the provider), uninstall (revoked at the provider, tokens deleted) and
 * publications (which agent serves which workspace).
 *
 * Guarantees (test/e2e/integrations/*.test.ts):
 * - an integration whose settings are unset is listed with `configured: false` and the names of
 *   the missing settings; its install is a 400 naming them;
 * - the OAuth `state` is a random single-use id bound to the tenant, the integration and the
 *   installer, valid STATE_TTL_MS; a callback with an unknown, used, expired or other
 *   integration's state installs nothing;
 * - an account (GitHub installation, Linear organization, Slack team) belongs to one tenant: a
 *   second tenant's install of it is refused; the same tenant's re-install refreshes the tokens;
 * - provider tokens are sealed under the root secret and never served;
 * - installs, publications and threads are tenant-scoped: another tenant's ids are 404.
 */
import { randomBytes } from 'node:crypto';
import type { SecretBox } from '../crypto.js';
import { ApiError, invalid, notFound } from '../errors.js';
import { newId } from '../ids.js';
import type { Logger } from '../log.js';
import type { Collections } from '../store/collections.js';
import { DuplicateKeyError } from '../store/port.js';
import { nowIso } from '../util.js';
import {
  INTEGRATION_IDS,
  IntegrationError,
  WEBHOOK_PATHS,
  type CompletedInstall,
  type IntegrationId,
  type IntegrationProvider,
  type InstallCredentials,
} from './port.js';
import { checkPublication } from './publications.js';
import {
  installTokenPurpose,
  renderInstall,
  renderPublication,
  routeId,
  type InstallDoc,
} from './records.js';

export const STATE_TTL_MS = 10 * 60_000;
/** Tokens that expire are refreshed this long before they do. */
export const REFRESH_MARGIN_MS = 5 * 60_000;

export interface IntegrationDeps {
  c: Collections;
  secrets: SecretBox;
  providers: ReadonlyMap<IntegrationId, IntegrationProvider>;
  /** INTEGRATIONS_PUBLIC_URL: where providers reach the callback and webhook paths. */
  publicUrl: string | null;
  log: Logger;
  now?: () => number;
}

export class IntegrationService {
  private readonly now: () => number;
  constructor(readonly d: IntegrationDeps) {
    this.now = d.now ?? Date.now;
  }

  provider(id: string): IntegrationProvider {
    const p = this.d.providers.get(id as IntegrationId);
    if (!p)
      throw new ApiError(
        'not_found',
        `integration ${JSON.stringify(id.slice(0, 40))} does not exist (shipped: ${INTEGRATION_IDS.join(', ')})`,
        { field: 'id' },
      );
    return p;
  }

  /** The names install needs that are unset, INTEGRATIONS_PUBLIC_URL included. */
  missing(p: IntegrationProvider): string[] {
    return [...p.missingSettings(), ...(this.d.publicUrl ? [] : ['INTEGRATIONS_PUBLIC_URL'])];
  }

  private base(): string {
    return (this.d.publicUrl ?? '').replace(/\/$/, '');
  }
  callbackUrl(id: IntegrationId): string {
    return `${this.base()}/v1/svc/integrations/${id}/callback`;
  }
  webhookUrl(id: IntegrationId): string {
    return `${this.base()}/v1/svc/integrations/${id}/${WEBHOOK_PATHS[id]}`;
  }

  async list(tenant: string) {
    const installs = await this.d.c.integrationInstalls.find(tenant, {}, { sort: { _id: 1 } });
    return {
      data: INTEGRATION_IDS.map((id) => {
        const p = this.provider(id);
        const missing = this.missing(p);
        return {
          id,
          type: 'integration' as const,
          name: p.name,
          configured: missing.length === 0,
          missing_settings: missing,
          callback_url: this.d.publicUrl ? this.callbackUrl(id) : null,
          webhook_url: this.d.publicUrl ? this.webhookUrl(id) : null,
          installs: installs.filter((i) => i.integration === id).map(renderInstall),
        };
      }),
    };
  }

  /** Starts an install: a single-use state and the provider's authorize URL. */
  async install(tenant: string, id: string, installedBy: string) {
    const p = this.provider(id);
    const missing = this.missing(p);
    if (missing.length)
      throw invalid(
        'id',
        `integration ${id} is not configured: set ${missing.join(', ')} (see docs/integrations.md)`,
      );
    const state = randomBytes(24).toString('base64url');
    const expires = this.now() + STATE_TTL_MS;
    await this.d.c.integrationStates.deleteMany({ expires_at: { $lt: this.now() } });
    await this.d.c.integrationStates.insertOne({
      _id: state,
      tenant_id: tenant,
      integration: p.id,
      installed_by: installedBy,
      expires_at: expires,
    });
    return {
      type: 'integration_install_url' as const,
      integration: p.id,
      url: p.authorizeUrl({ state, redirectUri: this.callbackUrl(p.id) }),
      expires_at: new Date(expires).toISOString(),
    };
  }

  /**
   * The provider's redirect back: consumes the state, completes the OAuth exchange and records
   * the installs. Errors are IntegrationError (shown to the user on the callback page).
   */
  async callback(id: string, query: URLSearchParams) {
    const p = this.provider(id);
    const state = query.get('state') ?? '';
    const pending = state
      ? await this.d.c.integrationStates.findOneAndUpdate(
          { _id: state, integration: p.id },
          { $set: { expires_at: 0 } },
          { returnDocument: 'before' },
        )
      : null;
    if (!pending || pending.expires_at < this.now())
      throw new IntegrationError(
        'this install link is unknown, used or expired: start the install again',
      );
    await this.d.c.integrationStates.deleteOne({ _id: state });
    const completed = await p.complete(query, this.callbackUrl(p.id));
    const out: InstallDoc[] = [];
    for (const ci of completed)
      out.push(await this.record(pending.tenant_id, p.id, ci, pending.installed_by));
    return { tenant_id: pending.tenant_id, installs: out.map(renderInstall) };
  }

  private async record(
    tenant: string,
    integration: IntegrationId,
    ci: CompletedInstall,
    installedBy: string,
  ): Promise<InstallDoc> {
    const rid = routeId(integration, ci.external_id);
    const route = await this.d.c.integrationRoutes.findOne({ _id: rid });
    if (route && route.tenant_id !== tenant)
      throw new IntegrationError(
        `${ci.account.name} is already installed for another tenant of this platform: uninstall it there first`,
      );
    const existing = route
      ? await this.d.c.integrationInstalls.get(tenant, route.install_id)
      : null;
    const id = existing?._id ?? newId('inst_');
    const sealed =
      ci.access_token || ci.refresh_token
        ? this.d.secrets.seal(
            JSON.stringify({ access_token: ci.access_token, refresh_token: ci.refresh_token }),
            installTokenPurpose(id),
          )
        : null;
    const at = nowIso();
    const doc: InstallDoc = {
      _id: id,
      tenant_id: tenant,
      integration,
      external_id: ci.external_id,
      account: ci.account,
      sealed_tokens: sealed,
      expires_at: ci.expires_at,
      scopes: ci.scopes,
      data: ci.data,
      installed_by: installedBy,
      created_at: existing?.created_at ?? at,
      updated_at: at,
    };
    if (existing) {
      const { _id, tenant_id: _t, ...rest } = doc;
      await this.d.c.integrationInstalls.updateOne(tenant, { _id }, { $set: rest });
      return doc;
    }
    await this.d.c.integrationInstalls.insert(tenant, doc);
    try {
      await this.d.c.integrationRoutes.insertOne({ _id: rid, tenant_id: tenant, install_id: id });
    } catch (err) {
      await this.d.c.integrationInstalls.deleteOne(tenant, { _id: id });
      if (err instanceof DuplicateKeyError)
        throw new IntegrationError(`${ci.account.name} was installed concurrently: try again`);
      throw err;
    }
    return doc;
  }

  /** The install's tokens, unsealed, for an adapter call. */
  credentials(doc: InstallDoc): InstallCredentials {
    const t = doc.sealed_tokens
      ? (JSON.parse(this.d.secrets.open(doc.sealed_tokens, installTokenPurpose(doc._id))) as {
          access_token: string | null;
          refresh_token: string | null;
        })
      : { access_token: null, refresh_token: null };
    return { external_id: doc.external_id, ...t, data: doc.data };
  }

  /**
   * Runs `fn` with the install's tokens, refreshed first where the provider's tokens expire
   * (REFRESH_MARGIN_MS before `expires_at`) and once more when the provider answers 401. The
   * refreshed tokens replace the stored ones only if no other process replaced them first (the
   * sealed value is the condition); the loser re-reads and uses the winner's. Proved by
   * core/test/integrations.actions.test.ts ("refresh…", the grant) and test/e2e/integrations/linear.test.ts.
   */
  async withCredentials<T>(
    doc: InstallDoc,
    fn: (creds: InstallCredentials) => Promise<T>,
  ): Promise<T> {
    const p = this.d.providers.get(doc.integration);
    const expires = doc.expires_at ? Date.parse(doc.expires_at) : NaN;
    let current = doc;
    if (p?.refresh && expires - REFRESH_MARGIN_MS <= this.now())
      current = await this.refreshed(p, current);
    try {
      return await fn(this.credentials(current));
    } catch (err) {
      if (!p?.refresh || !(err instanceof IntegrationError) || err.status !== 401) throw err;
      return fn(this.credentials(await this.refreshed(p, current)));
    }
  }

  private async refreshed(p: IntegrationProvider, doc: InstallDoc): Promise<InstallDoc> {
    const creds = this.credentials(doc);
    if (!creds.refresh_token) return doc;
    let t;
    try {
      t = await p.refresh!(creds);
    } catch (err) {
      // Another process may have used the (rotating) refresh token a moment ago.
      const now = await this.d.c.integrationInstalls.get(doc.tenant_id, doc._id);
      if (now && now.sealed_tokens !== doc.sealed_tokens) return now;
      throw err;
    }
    const sealed = this.d.secrets.seal(
      JSON.stringify({ access_token: t.access_token, refresh_token: t.refresh_token }),
      installTokenPurpose(doc._id),
    );
    const set = { sealed_tokens: sealed, expires_at: t.expires_at, updated_at: nowIso() };
    const n = await this.d.c.integrationInstalls.updateOne(
      doc.tenant_id,
      { _id: doc._id, sealed_tokens: doc.sealed_tokens },
      { $set: set },
    );
    if (n.matched) return { ...doc, ...set };
    return (await this.d.c.integrationInstalls.get(doc.tenant_id, doc._id)) ?? { ...doc, ...set };
  }

  /**
   * Revokes at the provider and deletes the install, its route, tokens and threads. With several
   * installs of one integration, `install_id` says which. `revoked: false` when the provider
   * refused (the local record is deleted all the same: the tokens are gone from here).
   */
  async uninstall(tenant: string, id: string, installId: string | undefined) {
    const p = this.provider(id);
    const installs = await this.d.c.integrationInstalls.find(tenant, { integration: p.id });
    if (installId !== undefined && (typeof installId !== 'string' || !installId))
      throw invalid('install_id', 'must be an install id (inst_…)');
    const doc = installId ? installs.find((i) => i._id === installId) : installs[0];
    if (!doc) throw notFound('install', installId ?? id);
    if (!installId && installs.length > 1)
      throw invalid('install_id', `${installs.length} installs of ${id}: say which (install_id)`);
    let revoked = true;
    let reason: string | null = null;
    try {
      await this.withCredentials(doc, (creds) => p.revoke(creds));
    } catch (err) {
      revoked = false;
      reason = err instanceof IntegrationError ? err.message : 'the provider could not be reached';
      this.d.log.warn('integration revoke failed', { integration: p.id, install: doc._id, reason });
    }
    await this.forget(tenant, doc);
    return {
      id: doc._id,
      type: 'integration_uninstalled' as const,
      integration: p.id,
      revoked,
      ...(reason ? { revoke_error: reason } : {}),
    };
  }

  /** Deletes an install and everything keyed by it (also when the provider says it is gone). */
  async forget(tenant: string, doc: InstallDoc): Promise<void> {
    await this.d.c.integrationRoutes.deleteOne({
      _id: routeId(doc.integration, doc.external_id),
      tenant_id: tenant,
    });
    await this.d.c.integrationThreads.deleteMany(tenant, { install_id: doc._id });
    await this.d.c.integrationInstalls.deleteOne(tenant, { _id: doc._id });
  }

  /**
   * A token for git over HTTPS to `repoUrl` from one of the tenant's installs that covers it (a
   * GitHub installation of the repository's owner), or null. Minted per use by the adapter; never
   * stored with the session. Proved by test/e2e/integrations/github-repository.test.ts.
   */
  async repositoryToken(tenant: string, repoUrl: string): Promise<string | null> {
    let url: URL;
    try {
      url = new URL(repoUrl);
    } catch {
      return null;
    }
    const installs = await this.d.c.integrationInstalls.find(tenant, {}, { sort: { _id: 1 } });
    for (const doc of installs) {
      const p = this.d.providers.get(doc.integration);
      if (!p?.repositoryToken || p.missingSettings().length) continue;
      const token = await p.repositoryToken(this.credentials(doc), url);
      if (token) return token;
    }
    return null;
  }

  async listPublications(tenant: string, id: string) {
    const p = this.provider(id);
    const docs = await this.d.c.integrationPublications.find(
      tenant,
      { integration: p.id },
      { sort: { _id: 1 } },
    );
    return { data: docs.map(renderPublication) };
  }

  async createPublication(tenant: string, id: string, body: unknown) {
    const p = this.provider(id);
    const doc = await checkPublication(this.d.c, tenant, p.id, body, [
      'reply',
      ...p.actions.map((a) => a.capability),
    ]);
    await this.d.c.integrationPublications.insert(tenant, doc);
    return renderPublication({ ...doc, tenant_id: tenant });
  }

  async deletePublication(tenant: string, id: string, pubId: string) {
    const p = this.provider(id);
    const n = await this.d.c.integrationPublications.deleteOne(tenant, {
      _id: pubId,
      integration: p.id,
    });
    if (!n) throw notFound('publication', pubId);
    return { id: pubId, type: 'integration_publication_deleted' as const };
  }
}
