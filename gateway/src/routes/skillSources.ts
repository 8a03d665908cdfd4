/**
 * Skill sources (`svc` extension, beta header required): discover what a source's Agent Skills
 * index offers, install skills from it, check installed skills for updates, update them, and
 * list them. Tenant-scoped; the work is core/src/skills/sources/sources.ts, the shapes are
 * schemas/src/skillSources.ts. Proved by test/e2e/skills/skill-sources.test.ts.
 *
 * - POST discover `{url}` → `{source, skills: [{name, description, type, digest,
 *   installed_skill_id}]}`
 * - POST install `{url, skills: [names]}` → `{source, skills: [{skill_id, name, status:
 *   installed|updated|unchanged, version, digest}]}`
 * - POST check-updates / update `{skill_ids?}` → `{data: [{skill_id, name, source, digest,
 *   status, available_digest, version, error}]}`
 * - GET installed → `{data: [{skill_id, name, source, digest, latest_version}]}`
 */
import type { FastifyInstance } from 'fastify';
import { SkillSourceDiscover, SkillSourceInstall, SkillSourceSelection } from '@agentfleet/schemas';
import { bodyOf, optionalBody, tenantOf } from '../http.js';
import type { GatewayServices } from '../services.js';

const discoverBody = bodyOf(SkillSourceDiscover);
const installBody = bodyOf(SkillSourceInstall);
const selectionBody = optionalBody(SkillSourceSelection);
const beta = { config: { beta: true } };
export const SKILL_SOURCES_BASE = '/v1/svc/skill-sources';

export function skillSourceRoutes(
  app: FastifyInstance,
  p: Pick<GatewayServices, 'skills' | 'config'>,
) {
  const s = p.skills.sources(p.config);
  app.addHook('onClose', async () => s.close());
  const B = SKILL_SOURCES_BASE;
  app.post(`${B}/discover`, beta, async (req) => s.discover(tenantOf(req), discoverBody(req).url));
  app.post(`${B}/install`, beta, async (req) => {
    const body = installBody(req);
    return s.install(tenantOf(req), body.url, body.skills);
  });
  app.post(`${B}/check-updates`, beta, async (req) =>
    s.checkUpdates(tenantOf(req), selectionBody(req).skill_ids),
  );
  app.post(`${B}/update`, beta, async (req) =>
    s.update(tenantOf(req), selectionBody(req).skill_ids),
  );
  app.get(`${B}/installed`, beta, async (req) => s.installed(tenantOf(req)));
}
