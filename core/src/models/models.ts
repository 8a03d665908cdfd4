/**
 * Model cards (per tenant) and the deployment's fallback vendor key.
 *
 * Guarantees (tested in test/e2e/models/model-cards-egress.test.ts, test/e2e/auth/tenancy-auth.test.ts,
 * test/e2e/sessions/sessions-events.test.ts):
 * - The API key and the custom header values are sealed at rest (AES-256-GCM under
 *   PLATFORM_ROOT_SECRET, core/src/crypto.ts). A card serves `api_key_preview` and
 *   `custom_headers` with every value replaced by CUSTOM_HEADER_MASK (names only); the values
 *   reach the provider only. Cards stored before sealing are sealed on start
 *   (`sealLegacyHeaders`) and, failing that, on first read.
 * - A base_url of a tenant other than the operator's (the operator key's tenant, tnt_default)
 *   is under the egress policy (core/src/egress): a literal private address is refused at
 *   create/update, a name resolving to one is refused at create/update and again on every
 *   connection (probe and turns connect to the checked address only). The refusal is a 400
 *   naming `base_url`, given before any connection, so it is the same whether something
 *   answers at that address or not. Only EGRESS_ALLOW_PRIVATE_HOSTS opens a private host.
 * - The operator's own cards and the vendor fallback (ANTHROPIC_BASE_URL) are operator
 *   configuration and are not restricted.
 * - Rotation (`rotate`) changes api_key, base_url (egress policy as on create), custom_headers,
 *   model or pi_config; the credential is read on every resolve, so a rotated key is used from
 *   the next model request on, and a request already under way keeps the key it resolved
 *   (spec rule 2). A create body without `model` is the older body: provider restricted to
 *   LEGACY_PROVIDERS (rule 3). Proved by test/e2e/models/model-cards-full.test.ts.
 * - The sealed credentials go only to the endpoint they were given for: a rotation that moves
 *   the card to another base_url must carry api_key (else a 400 naming `api_key`) and, if the
 *   card has custom headers, custom_headers with real values (else a 400 naming
 *   `custom_headers`), refused before anything connects; provider never changes. Any change of
 *   key, endpoint or headers runs the capability probe with the values to be stored; a key the
 *   provider refuses (401/403) is a 400 naming `api_key`, the card unchanged. Proved by
 *   test/e2e/models/model-cards-full.test.ts ("a moved card takes no credential along").
 */
import {
  CUSTOM_HEADER_MASK,
  type ModelCardCreate,
  type ModelCardOut,
  type ModelConfig,
  type ModelsListRequest,
  LEGACY_PROVIDERS,
} from '@agentfleet/schemas';
import { ApiError, conflict, invalid, notFound } from '../errors.js';
import { last4, type SecretBox } from '../crypto.js';
import { newId, PREFIX } from '../ids.js';
import { DuplicateKeyError } from '../store/port.js';
import { protocolOf, providerProtocol } from './protocols.js';
import type { ModelProvider, ProviderFactory } from './port.js';
import { CONNECTION_HEADERS } from './providerHelpers.js';
import { checkPiConfig } from './piConfig.js';
import { checkPiRequestConfig } from './piRequest.js';
import { cardOf, listPriceOfCard, modelListPrice, type TokenPrices } from './prices.js';
import type { Collections } from '../store/collections.js';
import type { ModelCardDoc } from './records.js';
import { nowIso } from '../util.js';
import { DEFAULT_TENANT } from '../auth/auth.js';
import {
  ALLOW_PRIVATE_SETTING,
  createEgressPolicy,
  egressRefusalIn,
  type EgressPolicy,
} from '../egress/policy.js';
import { egressFetch, type HttpFetch } from '../egress/dispatcher.js';
import { catalogFor, discoverModels, probeListing, type CatalogModel } from './catalog.js';
import { readCardKey } from './cardKeys.js';

export interface VendorFallback {
  apiKey: string;
  baseUrl?: string;
}

export interface ResolvedModel {
  provider: ModelProvider;
  /** The card's provider id (the vendor fallback: `anthropic`); the ledger's service prefix. */
  providerId: string;
  wireModel: string;
  protocol: 'anthropic' | 'openai';
  supportsFast: boolean;
  source: 'model_card' | 'vendor_fallback';
  /**
   * The card's pi_config (read by workers/src/turn/modelSettings.ts); null for the vendor
   * fallback.
   */
  piConfig: Record<string, unknown> | null;
  /** The list price read with the same card (prices.ts `modelListPrice`); null: none. */
  listPrice: TokenPrices | null;
}

const HEADERS_PURPOSE = 'model-card-headers';
const PRIVATE_REFUSAL = `private addresses are not allowed unless the operator opens them (${ALLOW_PRIVATE_SETTING})`;

export class ModelResolver {
  constructor(
    private readonly c: Collections,
    private readonly secrets: SecretBox,
    private readonly vendor: VendorFallback | null,
    /** Builds a resolved card's provider (the adapters' createProvider, given by the assembly). */
    private readonly createProvider: ProviderFactory,
    private readonly egress: EgressPolicy = createEgressPolicy(),
    /** HTTP for tenants' base_urls: checked by the egress policy, pinned to the checked address. */
    private readonly tenantFetch: HttpFetch = egressFetch(egress),
  ) {}

  /** True when the deployment's fallback vendor key (ANTHROPIC_API_KEY) serves uncarded models. */
  get hasVendorFallback(): boolean {
    return this.vendor !== null;
  }

  /** The tenant's list price of a model (./prices.ts modelListPrice); null: unpriced. */
  listPrice(tenant: string, modelId: string): Promise<TokenPrices | null> {
    return modelListPrice(this.c, tenant, modelId, this.hasVendorFallback);
  }

  /** The operator's tenant configures the deployment; its cards are not under the egress policy. */
  private restricted(tenant: string): boolean {
    return tenant !== DEFAULT_TENANT;
  }

  /**
   * Refuses a restricted tenant's base_url on a private address: a literal at once, a name
   * after resolving it (`resolve`; create leaves that to the probe, which connects through the
   * policy). Resolution failures pass (the probe reports the host unreachable; turns fail).
   */
  private async checkBaseUrl(
    tenant: string,
    baseUrl: string | undefined,
    resolve: boolean,
  ): Promise<void> {
    if (!baseUrl || !this.restricted(tenant)) return;
    let url: URL;
    try {
      url = new URL(baseUrl);
    } catch {
      throw invalid('base_url', 'not a valid URL');
    }
    const port = Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
    if (this.egress.checkLiteral(url.hostname, port)) throw invalid('base_url', PRIVATE_REFUSAL);
    if (!resolve) return;
    try {
      await this.egress.resolve(url.hostname, port);
    } catch (err) {
      if (egressRefusalIn(err)) throw invalid('base_url', PRIVATE_REFUSAL);
    }
  }

  /** Header names the HTTP client owns are refused (a 400 naming the header). */
  private checkHeaders(headers: Record<string, string> | undefined): void {
    for (const name of Object.keys(headers ?? {})) {
      if (CONNECTION_HEADERS.has(name.toLowerCase()))
        throw invalid(
          `custom_headers.${name}`,
          'this header is set by the platform and cannot be overridden',
        );
    }
  }

  /** The stored custom headers of a card, opened (legacy cards: the clear values). */
  private openHeaders(d: ModelCardDoc): Record<string, string> {
    if (d.custom_headers_sealed)
      return JSON.parse(this.secrets.open(d.custom_headers_sealed, HEADERS_PURPOSE)) as Record<
        string,
        string
      >;
    return { ...(d.custom_headers ?? {}) };
  }

  private sealHeaders(
    headers: Record<string, string>,
  ): Pick<ModelCardDoc, 'custom_headers_sealed' | 'custom_header_names'> {
    const names = Object.keys(headers);
    return {
      custom_header_names: names,
      custom_headers_sealed: names.length
        ? this.secrets.seal(JSON.stringify(headers), HEADERS_PURPOSE)
        : null,
    };
  }

  /** Seals the clear custom headers of one legacy card in place. */
  private async sealLegacy(d: ModelCardDoc): Promise<ModelCardDoc> {
    if (d.custom_headers === undefined) return d;
    const sealed = this.sealHeaders(this.openHeaders(d));
    await this.c.modelCards.updateOne(
      d.tenant_id,
      { _id: d._id },
      { $set: sealed, $unset: { custom_headers: '' } },
    );
    const { custom_headers: _clear, ...rest } = d;
    return { ...rest, ...sealed };
  }

  /** Seals the custom headers of every card stored in clear (run at start). Returns how many. */
  async sealLegacyHeaders(): Promise<number> {
    const legacy = await this.c.modelCards.scanAll({ custom_headers: { $exists: true } });
    for (const d of legacy) await this.sealLegacy(d);
    return legacy.length;
  }

  /** Card `id`'s cleartext key, for the agent workers' internal route (./cardKeys.ts). */
  readCardKey(id: string) {
    return readCardKey(this.c, this.secrets, id);
  }

  async create(
    tenant: string,
    body: ModelCardCreate,
  ): Promise<{ card: ModelCardOut; probe: Record<string, unknown> }> {
    if (
      body.model === undefined &&
      !(LEGACY_PROVIDERS as readonly string[]).includes(body.provider)
    )
      throw invalid(
        'provider',
        `the older create body (no 'model') accepts only ${LEGACY_PROVIDERS.join(', ')}; send 'model' for other providers`,
      );
    const model = body.model ?? body.model_id;
    const proto = protocolOf(body.provider, body.pi_config ?? null);
    if (!proto)
      throw invalid(
        'pi_config.api',
        `custom provider '${body.provider}' must set pi_config.api (anthropic-messages or openai-completions)`,
      );
    this.checkHeaders(body.custom_headers);
    checkPiConfig(body.pi_config);
    checkPiRequestConfig(body.pi_config, proto.protocol);
    if (Object.values(body.custom_headers ?? {}).includes(CUSTOM_HEADER_MASK)) {
      throw invalid(
        'custom_headers',
        `'${CUSTOM_HEADER_MASK}' is the masked value a card serves; send the real header value`,
      );
    }
    await this.checkBaseUrl(tenant, body.base_url, false);
    // The probe covers the known (legacy) providers; a custom provider whose protocol comes from
    // pi_config.api is not probed (spec: `{ok: null, reason: 'unsupported_provider'}` = skipped).
    const probe = providerProtocol(body.provider)
      ? await this.probe(tenant, proto.protocol, body.api_key, body.base_url, body.custom_headers)
      : { ok: null, reason: 'unsupported_provider' };
    if (probe.ok === false && (probe.status === 401 || probe.status === 403)) {
      throw invalid('api_key', `rejected by the provider (HTTP ${probe.status})`);
    }
    const now = nowIso();
    const doc: Omit<ModelCardDoc, 'tenant_id'> = {
      _id: newId(PREFIX.modelCard),
      model_id: body.model_id,
      provider: body.provider,
      model,
      base_url: body.base_url ?? null,
      ...this.sealHeaders(body.custom_headers ?? {}),
      api_key_sealed: this.secrets.seal(body.api_key, 'model-card-key'),
      api_key_preview: last4(body.api_key),
      pi_config: body.pi_config ?? null,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.c.modelCards.insert(tenant, doc);
    } catch (err) {
      if (err instanceof DuplicateKeyError)
        throw conflict(`model_id: a model card '${body.model_id}' already exists`);
      throw err;
    }
    return { card: renderCard({ ...doc, tenant_id: tenant }), probe };
  }

  async rotate(tenant: string, id: string, body: Partial<ModelCardCreate>): Promise<ModelCardOut> {
    const cur = await this.c.modelCards.get(tenant, id);
    if (!cur) throw notFound('model card', id);
    if (body.model_id !== undefined && body.model_id !== cur.model_id)
      throw invalid('model_id', 'cannot change; create a new card');
    if (body.provider !== undefined && body.provider !== cur.provider)
      throw invalid('provider', 'cannot change; create a new card');
    const set: Partial<ModelCardDoc> = { updated_at: nowIso() };
    const moved = body.base_url !== undefined && body.base_url !== (cur.base_url ?? undefined);
    if (body.base_url !== undefined) {
      await this.checkBaseUrl(tenant, body.base_url, true);
      set.base_url = body.base_url;
    }
    const storedHeaders = this.openHeaders(cur);
    if (moved && body.api_key === undefined)
      throw invalid('api_key', 'a card moved to another base_url keeps no key; send api_key');
    if (moved && body.custom_headers === undefined && Object.keys(storedHeaders).length)
      throw invalid(
        'custom_headers',
        'a card moved to another base_url keeps no header values; send custom_headers',
      );
    if (body.api_key !== undefined)
      Object.assign(set, {
        api_key_sealed: this.secrets.seal(body.api_key, 'model-card-key'),
        api_key_preview: last4(body.api_key),
      });
    let unset: Record<string, ''> | undefined;
    let headers = storedHeaders;
    if (body.custom_headers !== undefined) {
      this.checkHeaders(body.custom_headers);
      // A value equal to the mask (a card read back and sent again) keeps the stored value,
      // on the same base_url only.
      headers = {};
      for (const [name, value] of Object.entries(body.custom_headers)) {
        if (value !== CUSTOM_HEADER_MASK) headers[name] = value;
        else if (!moved && Object.hasOwn(storedHeaders, name)) headers[name] = storedHeaders[name];
        else
          throw invalid(
            `custom_headers.${name}`,
            moved
              ? 'a card moved to another base_url keeps no header values; send the real value'
              : `'${CUSTOM_HEADER_MASK}' is the masked value a card serves; send the real header value`,
          );
      }
      Object.assign(set, this.sealHeaders(headers));
      unset = { custom_headers: '' };
    }
    if (body.model !== undefined) set.model = body.model;
    if (body.pi_config !== undefined) {
      checkPiConfig(body.pi_config);
      const proto = protocolOf(cur.provider, body.pi_config);
      if (!proto)
        throw invalid('pi_config.api', `custom provider '${cur.provider}' must keep pi_config.api`);
      checkPiRequestConfig(body.pi_config, proto.protocol);
      set.pi_config = body.pi_config;
    }
    const known = providerProtocol(cur.provider);
    if (known && (moved || body.api_key !== undefined || body.custom_headers !== undefined)) {
      const apiKey = body.api_key ?? this.secrets.open(cur.api_key_sealed, 'model-card-key');
      const baseUrl = body.base_url ?? cur.base_url ?? undefined;
      const probe = await this.probe(tenant, known.protocol, apiKey, baseUrl, headers);
      if (probe.ok === false && (probe.status === 401 || probe.status === 403))
        throw invalid('api_key', `rejected by the provider (HTTP ${probe.status})`);
    }
    const after = await this.c.modelCards.findOneAndUpdate(
      tenant,
      { _id: id },
      { $set: set, ...(unset ? { $unset: unset } : {}) },
      { returnDocument: 'after' },
    );
    if (!after) throw notFound('model card', id);
    return renderCard(await this.sealLegacy(after));
  }

  /**
   * `POST /v1/svc/models/list` (core/src/models/catalog.ts): the static catalog, or with
   * `api_key` (deprecated) live discovery for the legacy protocols, under the egress policy.
   */
  async listModels(tenant: string, body: ModelsListRequest): Promise<CatalogModel[]> {
    if (body.api_key === undefined) {
      if (body.base_url !== undefined)
        throw invalid('base_url', 'applies only to live discovery (with api_key)');
      return catalogFor(body.provider);
    }
    const proto = providerProtocol(body.provider);
    if (!proto)
      throw invalid('provider', 'live discovery covers only the legacy protocols (ant, oai)');
    await this.checkBaseUrl(tenant, body.base_url, false);
    const http = this.restricted(tenant) && body.base_url ? this.tenantFetch : fetch;
    try {
      return await discoverModels(
        body.provider,
        proto.protocol,
        body.api_key,
        body.base_url,
        http,
        egressRefusalIn,
      );
    } catch (err) {
      if (egressRefusalIn(err)) throw invalid('base_url', PRIVATE_REFUSAL);
      throw err;
    }
  }

  async list(tenant: string): Promise<ModelCardOut[]> {
    const docs = await this.c.modelCards.find(tenant, {}, { sort: { _id: 1 } });
    return Promise.all(docs.map(async (d) => renderCard(await this.sealLegacy(d))));
  }

  async remove(tenant: string, id: string): Promise<void> {
    if (!(await this.c.modelCards.deleteOne(tenant, { _id: id }))) throw notFound('model card', id);
  }

  /** Refuses models that cannot run: no card and no fallback key, or speed fast where unsupported. */
  async validateForAgent(tenant: string, model: ModelConfig): Promise<void> {
    const r = await this.lookup(tenant, model.id);
    if (!r) {
      throw invalid(
        'model',
        `no model card '${model.id}' for this tenant and no fallback vendor key (ANTHROPIC_API_KEY) is configured`,
      );
    }
    if (model.speed === 'fast' && !r.supportsFast) {
      throw new ApiError(
        'invalid_request',
        `model.speed: 'fast' is unsupported by provider '${r.providerName}' (protocol ${r.protocol} has no fast mode)`,
        { field: 'model.speed', unsupported: true },
      );
    }
  }

  private async lookup(tenant: string, modelId: string) {
    const card = await cardOf(this.c, tenant, modelId);
    if (card) {
      const p = protocolOf(card.provider, card.pi_config);
      if (!p) return null;
      return { ...p, providerName: card.provider, card };
    }
    if (this.vendor)
      return {
        protocol: 'anthropic' as const,
        supportsFast: true,
        providerName: 'anthropic',
        card: null,
      };
    return null;
  }

  /** Reads the credential live (decrypts on every resolve). */
  async resolve(tenant: string, model: ModelConfig): Promise<ResolvedModel> {
    const r = await this.lookup(tenant, model.id);
    if (!r)
      throw new ApiError(
        'invalid_request',
        `model '${model.id}' has no model card and no fallback vendor key`,
      );
    if (r.card) {
      const apiKey = this.secrets.open(r.card.api_key_sealed, 'model-card-key');
      const card = await this.sealLegacy(r.card);
      return {
        provider: this.createProvider({
          protocol: r.protocol,
          apiKey,
          baseUrl: card.base_url ?? undefined,
          customHeaders: this.openHeaders(card),
          supportsFast: r.supportsFast,
          // A tenant's base_url is checked on every connection, and the connection pinned.
          ...(this.restricted(tenant) && card.base_url ? { fetch: this.tenantFetch } : {}),
        }),
        providerId: r.card.provider,
        wireModel: r.card.model,
        protocol: r.protocol,
        supportsFast: r.supportsFast,
        source: 'model_card',
        piConfig: r.card.pi_config ?? null,
        listPrice: listPriceOfCard(r.card, model.id, this.hasVendorFallback),
      };
    }
    return {
      provider: this.createProvider({
        protocol: 'anthropic',
        apiKey: this.vendor!.apiKey,
        baseUrl: this.vendor!.baseUrl,
        supportsFast: true,
      }),
      providerId: 'anthropic',
      wireModel: model.id,
      protocol: 'anthropic',
      supportsFast: true,
      source: 'vendor_fallback',
      piConfig: null,
      listPrice: listPriceOfCard(null, model.id, true),
    };
  }

  /**
   * Capability probe, bounded at 6 s: lists models with the key so a bad key fails loudly. A
   * restricted tenant's probe goes through the egress policy; a refusal is a 400 on base_url.
   */
  private async probe(
    tenant: string,
    protocol: 'anthropic' | 'openai',
    apiKey: string,
    baseUrl?: string,
    headers: Record<string, string> = {},
  ): Promise<{ ok: boolean | null; status?: number; reason?: string }> {
    const http: HttpFetch = this.restricted(tenant) && baseUrl ? this.tenantFetch : fetch;
    try {
      return await probeListing(protocol, apiKey, baseUrl, headers, http, egressRefusalIn);
    } catch (err) {
      if (egressRefusalIn(err)) throw invalid('base_url', PRIVATE_REFUSAL);
      throw err;
    }
  }
}

export function renderCard(d: ModelCardDoc): ModelCardOut {
  return {
    id: d._id,
    type: 'model_card',
    model_id: d.model_id,
    provider: d.provider,
    model: d.model,
    base_url: d.base_url,
    // Names only: the values are sealed and never served.
    custom_headers: Object.fromEntries(
      (d.custom_header_names ?? Object.keys(d.custom_headers ?? {})).map((name) => [
        name,
        CUSTOM_HEADER_MASK,
      ]),
    ),
    api_key_preview: d.api_key_preview,
    pi_config: d.pi_config,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}
