import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import multipart from '@fastify/multipart';
import {
  checkSkillPath,
  invalid,
  readZip,
  SKILL_LIMITS,
  type Skill,
  type SkillListQuery,
} from '@agentfleet/core';
import { tenantOf } from '../http.js';
import type { GatewayServices } from '../services.js';
import { readJsonUpload, readMultipartUpload, type SkillUpload } from './skillUploads.js';

/**
 * Skills (`/v1/skills`, the SDK's `beta.skills` and `beta.skills.versions`). Serves both the
 * spec and the SDK:
 * - create: JSON `{files: [{filename, content}]}`, multipart (the SDK's `files[]` +
 *   `display_name`; the spec's `id`, `display_title`, `description` + files) and a zip at
 *   `/v1/skills/upload` (`file`). With `id` naming an existing skill, the upload publishes a new
 *   version of it (the spec's way to change a skill) and answers the skill;
 * - `source` is the spec's string (`vendor` | `custom`) unless the request comes from an official
 *   SDK (it sends `x-stainless-lang`): then the SDK's object `{type: 'anthropic' | 'custom'}`;
 *   every skill carries both `display_title` and `display_name`, `latest_version` and
 *   `latest_version_id`; a version carries `id` and `version` (the same numeric epoch string);
 * - versions: create (multipart `files[]` or JSON), list, retrieve, delete (the only version is
 *   refused: delete the skill), `…/versions/:version/content` (a zip, the SDK's `download`);
 * - `GET /v1/skills/:id/files/<path>` one file of the latest version (`?version=` another).
 * Another tenant's id is a 404 everywhere. Proved by test/e2e/skills/skills-api.test.ts and
 * test/e2e/skills/skills-sdk.test.ts.
 */
const CREATE_FIELDS = ['id', 'display_title', 'display_name', 'description'];
const FILE_PARTS = ['files[]', 'files', 'file'];

export const isSdkRequest = (req: FastifyRequest) => req.headers['x-stainless-lang'] !== undefined;

/** The skill in the caller's dialect (see the header). */
export function present(skill: Skill, sdk: boolean) {
  if (!sdk) return skill;
  return { ...skill, source: { type: skill.source === 'vendor' ? 'anthropic' : 'custom' } };
}

async function readUpload(req: FastifyRequest, fields: string[]): Promise<SkillUpload> {
  return req.isMultipart()
    ? readMultipartUpload(req, FILE_PARTS, fields)
    : readJsonUpload(req.body, fields);
}

function listQuery(req: FastifyRequest, keys: string[]): SkillListQuery {
  const q = { ...(req.query as Record<string, unknown>) };
  for (const k of Object.keys(q))
    if (!keys.includes(k)) throw invalid(k, 'is not a known query parameter');
  const one = (k: string): string | undefined => {
    const v = q[k];
    if (v === undefined) return undefined;
    if (typeof v !== 'string') throw invalid(k, 'must be given once');
    return v;
  };
  const out: SkillListQuery = {};
  const limit = one('limit');
  if (limit !== undefined) {
    if (!/^\d+$/.test(limit) || Number(limit) < 1 || Number(limit) > 100)
      throw invalid('limit', 'must be an integer from 1 to 100');
    out.limit = Number(limit);
  }
  const page = one('page');
  if (page !== undefined && page !== '') out.page = page;
  const source = one('source');
  if (source !== undefined && source !== '') {
    if (source === 'custom') out.source = 'custom';
    else if (source === 'vendor' || source === 'anthropic') out.source = 'vendor';
    else throw invalid('source', "must be 'custom' or 'vendor' (alias 'anthropic')");
  }
  return out;
}

function attachment(reply: FastifyReply, filename: string, type: string, data: Uint8Array) {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return reply
    .header('content-type', type)
    .header(
      'content-disposition',
      `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`,
    )
    .header('x-content-type-options', 'nosniff')
    .send(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
}

const TEXT_TYPES: Record<string, string> = {
  md: 'text/markdown; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
  py: 'text/x-python; charset=utf-8',
  sh: 'text/x-shellscript; charset=utf-8',
  json: 'application/json',
  js: 'text/javascript; charset=utf-8',
};
const typeOf = (name: string) =>
  TEXT_TYPES[name.split('.').pop()!.toLowerCase()] ?? 'application/octet-stream';

export function skillRoutes(app: FastifyInstance, p: Pick<GatewayServices, 'skills'>): void {
  const skills = p.skills;
  app.register(async (scope) => {
    await scope.register(multipart, {
      preservePath: true,
      throwFileSizeLimit: false,
      limits: {
        fileSize: SKILL_LIMITS.maxTotalBytes + 1,
        files: SKILL_LIMITS.maxFiles + 1,
        fields: 8,
        fieldSize: 4096,
        parts: SKILL_LIMITS.maxFiles + 9,
      },
      isPartAFile: (
        field: string | undefined,
        _t: string | undefined,
        filename: string | undefined,
      ) => (field !== undefined && FILE_PARTS.includes(field)) || filename !== undefined,
    });

    /** New skill, or (with `id`) a new version of one; answers the skill. */
    const createOrVersion = async (req: FastifyRequest, up: SkillUpload) => {
      const tenant = tenantOf(req);
      const title = up.fields.get('display_title') ?? up.fields.get('display_name');
      const id = up.fields.get('id');
      if (id !== undefined) {
        if (title !== undefined || up.fields.has('description'))
          throw invalid(
            'id',
            'with id (a new version) display_title and description cannot be set',
          );
        await skills.createVersion(tenant, id, up.files);
        return skills.get(tenant, id);
      }
      const description = up.fields.get('description');
      return skills.create(tenant, up.files, { display_title: title, description });
    };

    scope.post('/v1/skills', async (req) =>
      present(await createOrVersion(req, await readUpload(req, CREATE_FIELDS)), isSdkRequest(req)),
    );

    scope.post('/v1/skills/upload', async (req) => {
      if (!req.isMultipart())
        throw invalid('file', 'send multipart/form-data with a "file" part (a zip)');
      const up = await readMultipartUpload(req, ['file'], CREATE_FIELDS);
      if (up.files.length !== 1)
        throw invalid('file', 'exactly one "file" part (a zip) is required');
      const files = readZip(up.files[0]!.content, undefined, 'file');
      return present(await createOrVersion(req, { files, fields: up.fields }), isSdkRequest(req));
    });

    scope.post<{ Params: { id: string } }>('/v1/skills/:id/versions', async (req) => {
      const up = await readUpload(req, []);
      return skills.createVersion(tenantOf(req), req.params.id, up.files);
    });
  });

  app.get('/v1/skills', async (req) => {
    const page = await skills.list(tenantOf(req), listQuery(req, ['limit', 'page', 'source']));
    const sdk = isSdkRequest(req);
    return { ...page, data: page.data.map((s) => present(s, sdk)) };
  });
  app.get<{ Params: { id: string } }>('/v1/skills/:id', async (req) =>
    present(await skills.get(tenantOf(req), req.params.id), isSdkRequest(req)),
  );
  app.delete<{ Params: { id: string } }>('/v1/skills/:id', async (req) =>
    skills.delete(tenantOf(req), req.params.id),
  );

  app.get<{ Params: { id: string } }>('/v1/skills/:id/versions', async (req) =>
    skills.listVersions(tenantOf(req), req.params.id, listQuery(req, ['limit', 'page'])),
  );
  app.get<{ Params: { id: string; version: string } }>(
    '/v1/skills/:id/versions/:version',
    async (req) => skills.getVersion(tenantOf(req), req.params.id, req.params.version),
  );
  app.delete<{ Params: { id: string; version: string } }>(
    '/v1/skills/:id/versions/:version',
    async (req) => skills.deleteVersion(tenantOf(req), req.params.id, req.params.version),
  );
  app.get<{ Params: { id: string; version: string } }>(
    '/v1/skills/:id/versions/:version/content',
    async (req, reply) => {
      const z = await skills.zipVersion(tenantOf(req), req.params.id, req.params.version);
      return attachment(reply, `${z.name}-${z.version}.zip`, 'application/zip', z.zip);
    },
  );
  const fileRoute =
    (pathOf: (params: Record<string, string>) => string) =>
    async (req: FastifyRequest, reply: FastifyReply) => {
      const q = req.query as Record<string, unknown>;
      for (const k of Object.keys(q))
        if (k !== 'version') throw invalid(k, 'is not a known query parameter');
      const version = q.version;
      if (version !== undefined && (typeof version !== 'string' || version === ''))
        throw invalid('version', 'must be a version string or latest');
      const params = req.params as Record<string, string>;
      const filename = checkSkillPath(pathOf(params), 'filename');
      const data = await skills.readFile(tenantOf(req), params.id!, version, filename);
      return attachment(reply, filename.split('/').pop()!, typeOf(filename), data);
    };
  app.get(
    '/v1/skills/:id/files/:filename',
    fileRoute((p) => p.filename!),
  );
  app.get(
    '/v1/skills/:id/files/*',
    fileRoute((p) => p['*']!),
  );
}
