/**
 * `sessions.resources`: a session's resources one by one (the SDK's Resources API).
 * - list: creation order, `limit` (1–100, default 20) and the `page` cursor of `next_page`;
 * - retrieve / delete: by `sres_` id; another session's or tenant's resource is a 404;
 * - add: a `file` (the SDK's only kind; default mount /mnt/session/uploads/<file_id>), written
 *   into the sandbox at its next warmup;
 * - update: `authorization_token` of a repository resource (re-sealed; the proxy uses it from
 *   its next request, core/src/repositories/egress.ts); any other kind is a 400;
 * - delete: the resource goes, and with it a repository's token (from the next request on).
 * Tokens are never served. Proved by test/e2e/sessions/session-resources.test.ts (both SDKs).
 */
import { invalid, notFound } from '../errors.js';
import { encodeCursor, decodeCursor } from '../api/pagination.js';
import { nowIso } from '../util.js';
import type { SecretBox } from '../crypto.js';
import type { Collections } from '../store/collections.js';
import { checkToken, isRepositoryResource, tokenPurpose } from '../repositories/records.js';
import type { SessionDoc } from './records.js';
import { resolveFileResource } from './resources.js';

const MAX_RESOURCES = 100;
type Resource = { id: string; type: string } & Record<string, unknown>;

export class SessionResources {
  constructor(
    private readonly c: Collections,
    private readonly session: (tenant: string, id: string) => Promise<SessionDoc>,
    private readonly secrets: SecretBox | undefined,
  ) {}

  /** Resource id → token sealed under the root secret (bound to the resource id). */
  sealTokens(tokens: Record<string, string>): Record<string, string> {
    if (!this.secrets) throw new Error('session resources: no secret box to seal tokens with');
    const box = this.secrets;
    return Object.fromEntries(
      Object.entries(tokens).map(([id, t]) => [id, box.seal(t, tokenPurpose(id))]),
    );
  }

  async list(tenant: string, sessionId: string, q: { limit?: number; page?: string }) {
    const s = await this.session(tenant, sessionId);
    const all = s.resources as Resource[];
    const limit = q.limit ?? 20;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_RESOURCES)
      throw invalid('limit', `must be an integer from 1 to ${MAX_RESOURCES}`);
    let start = 0;
    if (q.page) {
      const c = decodeCursor(q.page);
      const at = all.findIndex((r) => r.id === c.k);
      if (c.d !== 'next' || at < 0) throw invalid('page', 'is not a page of this list');
      start = at + 1;
    }
    const data = all.slice(start, start + limit);
    const more = start + limit < all.length;
    return {
      data,
      next_page: more ? encodeCursor({ k: data[data.length - 1]!.id, d: 'next' }) : null,
    };
  }

  async get(tenant: string, sessionId: string, resourceId: string): Promise<Resource> {
    const s = await this.session(tenant, sessionId);
    const r = (s.resources as Resource[]).find((x) => x.id === resourceId);
    if (!r) throw notFound('session resource', resourceId);
    return r;
  }

  async add(
    tenant: string,
    sessionId: string,
    body: { type: 'file'; file_id: string; mount_path?: string | null },
  ): Promise<Resource> {
    const s = await this.writable(tenant, sessionId);
    if (s.resources.length >= MAX_RESOURCES)
      throw invalid('type', `a session has at most ${MAX_RESOURCES} resources`);
    const now = nowIso();
    const r = await resolveFileResource(
      this.c,
      tenant,
      {
        file_id: body.file_id,
        mount_path: body.mount_path ?? `/mnt/session/uploads/${body.file_id}`,
      },
      '',
      now,
    );
    const taken = (s.resources as Resource[]).some((x) => x.mount_path === r.mount_path);
    if (taken) throw invalid('mount_path', `${r.mount_path} is already a resource's mount path`);
    await this.c.sessions.updateOne(
      tenant,
      { _id: sessionId },
      { $set: { resources: [...s.resources, r], updated_at: now } },
    );
    return r as unknown as Resource;
  }

  async update(
    tenant: string,
    sessionId: string,
    resourceId: string,
    body: { authorization_token: string },
  ): Promise<Resource> {
    const s = await this.writable(tenant, sessionId);
    const all = s.resources as Resource[];
    const at = all.findIndex((x) => x.id === resourceId);
    if (at < 0) throw notFound('session resource', resourceId);
    const r = all[at]!;
    if (!isRepositoryResource(r))
      throw invalid(
        'authorization_token',
        `only repository resources take an authorization_token; ${resourceId} is a ${r.type} resource`,
      );
    checkToken(body.authorization_token, 'authorization_token');
    const now = nowIso();
    const next = { ...r, updated_at: now };
    const resources = all.map((x, i) => (i === at ? next : x));
    await this.c.sessions.updateOne(
      tenant,
      { _id: sessionId },
      {
        $set: {
          resources,
          repository_tokens: {
            ...(s.repository_tokens ?? {}),
            ...this.sealTokens({ [resourceId]: body.authorization_token }),
          },
          updated_at: now,
        },
      },
    );
    return next as Resource;
  }

  async remove(tenant: string, sessionId: string, resourceId: string) {
    const s = await this.session(tenant, sessionId);
    const all = s.resources as Resource[];
    if (!all.some((x) => x.id === resourceId)) throw notFound('session resource', resourceId);
    const { [resourceId]: _gone, ...tokens } = s.repository_tokens ?? {};
    await this.c.sessions.updateOne(
      tenant,
      { _id: sessionId },
      {
        $set: {
          resources: all.filter((x) => x.id !== resourceId),
          repository_tokens: tokens,
          updated_at: nowIso(),
        },
      },
    );
    return { id: resourceId, type: 'session_resource_deleted' as const };
  }

  private async writable(tenant: string, sessionId: string): Promise<SessionDoc> {
    const s = await this.session(tenant, sessionId);
    if (s.terminated_at)
      throw invalid('session', `session ${sessionId} is terminated; its resources cannot change`);
    if (s.archived_at)
      throw invalid('session', `session ${sessionId} is archived; its resources cannot change`);
    return s;
  }
}
