import type { ModelCardCreate, ModelCardOut, ModelConfig } from '@agentfleet/schemas';
import { ApiError, conflict, invalid, notFound } from '../errors.js';
import { last4, type SecretBox } from '../crypto.js';
import { newId, PREFIX } from '../ids.js';
import { DuplicateKeyError } from '../ports/store.js';
import { createProvider, providerProtocol } from '../model/providers.js';
import type { ModelProvider } from '../model/types.js';
import type { Collections, ModelCardDoc } from './collections.js';
import { nowIso } from '../util.js';

export interface VendorFallback {
  apiKey: string;
  baseUrl?: string;
}

export interface ResolvedModel {
  provider: ModelProvider;
  wireModel: string;
  protocol: 'anthropic' | 'openai';
  supportsFast: boolean;
  source: 'model_card' | 'vendor_fallback';
}

const PI_API: Record<string, 'anthropic' | 'openai'> = {
  'anthropic-messages': 'anthropic',
  anthropic: 'anthropic',
  'openai-completions': 'openai',
  'openai-chat': 'openai',
  openai: 'openai',
};

function protocolOf(provider: string, piConfig: Record<string, unknown> | null): { protocol: 'anthropic' | 'openai'; supportsFast: boolean } | null {
  const known = providerProtocol(provider);
  if (known) return known;
  const api = typeof piConfig?.api === 'string' ? PI_API[piConfig.api] : undefined;
  return api ? { protocol: api, supportsFast: false } : null;
}

const PROBE_TIMEOUT_MS = 6_000;

/** Model cards (per tenant) and the deployment's fallback vendor key. */
export class ModelResolver {
  constructor(
    private readonly c: Collections,
    private readonly secrets: SecretBox,
    private readonly vendor: VendorFallback | null,
  ) {}

  async create(tenant: string, body: ModelCardCreate): Promise<{ card: ModelCardOut; probe: Record<string, unknown> }> {
    const proto = protocolOf(body.provider, body.pi_config ?? null);
    if (!proto) throw invalid('pi_config.api', `custom provider '${body.provider}' must set pi_config.api (anthropic-messages or openai-completions)`);
    const probe = await this.probe(proto.protocol, body.api_key, body.base_url, body.custom_headers);
    if (probe.ok === false && (probe.status === 401 || probe.status === 403)) {
      throw invalid('api_key', `rejected by the provider (HTTP ${probe.status})`);
    }
    const now = nowIso();
    const doc: Omit<ModelCardDoc, 'tenant_id'> = {
      _id: newId(PREFIX.modelCard),
      model_id: body.model_id,
      provider: body.provider,
      model: body.model,
      base_url: body.base_url ?? null,
      custom_headers: body.custom_headers ?? {},
      api_key_sealed: this.secrets.seal(body.api_key, 'model-card-key'),
      api_key_preview: last4(body.api_key),
      pi_config: body.pi_config ?? null,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.c.modelCards.insert(tenant, doc);
    } catch (err) {
      if (err instanceof DuplicateKeyError) throw conflict(`model_id: a model card '${body.model_id}' already exists`);
      throw err;
    }
    return { card: renderCard({ ...doc, tenant_id: tenant }), probe };
  }

  async rotate(tenant: string, id: string, body: Partial<ModelCardCreate>): Promise<ModelCardOut> {
    const cur = await this.c.modelCards.get(tenant, id);
    if (!cur) throw notFound('model card', id);
    if (body.model_id !== undefined && body.model_id !== cur.model_id) throw invalid('model_id', 'cannot change; create a new card');
    if (body.provider !== undefined && body.provider !== cur.provider) throw invalid('provider', 'cannot change; create a new card');
    const set: Partial<ModelCardDoc> = { updated_at: nowIso() };
    if (body.api_key !== undefined) Object.assign(set, { api_key_sealed: this.secrets.seal(body.api_key, 'model-card-key'), api_key_preview: last4(body.api_key) });
    if (body.base_url !== undefined) set.base_url = body.base_url;
    if (body.custom_headers !== undefined) set.custom_headers = body.custom_headers;
    if (body.model !== undefined) set.model = body.model;
    if (body.pi_config !== undefined) set.pi_config = body.pi_config;
    const after = await this.c.modelCards.findOneAndUpdate(tenant, { _id: id }, { $set: set }, { returnDocument: 'after' });
    if (!after) throw notFound('model card', id);
    return renderCard(after);
  }

  async list(tenant: string): Promise<ModelCardOut[]> {
    return (await this.c.modelCards.find(tenant, {}, { sort: { _id: 1 } })).map(renderCard);
  }

  async remove(tenant: string, id: string): Promise<void> {
    if (!(await this.c.modelCards.deleteOne(tenant, { _id: id }))) throw notFound('model card', id);
  }

  /** Refuses models that cannot run: no card and no fallback key, or speed fast where unsupported. */
  async validateForAgent(tenant: string, model: ModelConfig): Promise<void> {
    const r = await this.lookup(tenant, model.id);
    if (!r) {
      throw invalid('model', `no model card '${model.id}' for this tenant and no fallback vendor key (ANTHROPIC_API_KEY) is configured`);
    }
    if (model.speed === 'fast' && !r.supportsFast) {
      throw new ApiError('invalid_request', `model.speed: 'fast' is unsupported by provider '${r.providerName}' (protocol ${r.protocol} has no fast mode)`, { field: 'model.speed', unsupported: true });
    }
  }

  private async lookup(tenant: string, modelId: string) {
    const card = await this.c.modelCards.findOne(tenant, { model_id: modelId });
    if (card) {
      const p = protocolOf(card.provider, card.pi_config);
      if (!p) return null;
      return { ...p, providerName: card.provider, card };
    }
    if (this.vendor) return { protocol: 'anthropic' as const, supportsFast: true, providerName: 'anthropic', card: null };
    return null;
  }

  /** Reads the credential live (decrypts on every resolve). */
  async resolve(tenant: string, model: ModelConfig): Promise<ResolvedModel> {
    const r = await this.lookup(tenant, model.id);
    if (!r) throw new ApiError('invalid_request', `model '${model.id}' has no model card and no fallback vendor key`);
    if (r.card) {
      const apiKey = this.secrets.open(r.card.api_key_sealed, 'model-card-key');
      return {
        provider: createProvider({ protocol: r.protocol, apiKey, baseUrl: r.card.base_url ?? undefined, customHeaders: r.card.custom_headers, supportsFast: r.supportsFast }),
        wireModel: r.card.model,
        protocol: r.protocol,
        supportsFast: r.supportsFast,
        source: 'model_card',
      };
    }
    return {
      provider: createProvider({ protocol: 'anthropic', apiKey: this.vendor!.apiKey, baseUrl: this.vendor!.baseUrl, supportsFast: true }),
      wireModel: model.id,
      protocol: 'anthropic',
      supportsFast: true,
      source: 'vendor_fallback',
    };
  }

  /** Capability probe, bounded at 6 s: lists models with the key so a bad key fails loudly. */
  private async probe(protocol: 'anthropic' | 'openai', apiKey: string, baseUrl?: string, headers: Record<string, string> = {}): Promise<{ ok: boolean | null; status?: number; reason?: string }> {
    const url = protocol === 'anthropic' ? `${baseUrl ?? 'https://api.anthropic.com'}/v1/models` : `${baseUrl ?? 'https://api.openai.com/v1'}/models`;
    const auth: Record<string, string> = protocol === 'anthropic' ? { 'x-api-key': apiKey, 'anthropic-version': '2023-06-01' } : { authorization: `Bearer ${apiKey}` };
    try {
      const res = await fetch(url, { headers: { ...headers, ...auth }, signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
      await res.body?.cancel();
      return res.ok ? { ok: true, status: res.status } : { ok: false, status: res.status, reason: `HTTP ${res.status}` };
    } catch (err) {
      return { ok: false, reason: (err as Error).name === 'TimeoutError' ? 'probe timed out after 6s' : `unreachable: ${(err as Error).message}` };
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
    custom_headers: d.custom_headers,
    api_key_preview: d.api_key_preview,
    pi_config: d.pi_config,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}
