import { ApiError, invalid, notFound } from '../errors.js';
import { ulid } from '../ids.js';
import { DuplicateKeyError } from '../store/port.js';
import type { Collections } from '../store/collections.js';
import type { ObjectStore } from '../objects/port.js';
import { encodeCursor, decodeCursor, pageById, type Page } from '../api/pagination.js';
import type { Config } from '../config/config.js';
import { BuiltinSkills } from './builtins.js';
import { SkillSourceService } from './sources/sources.js';
import { checkDisplayTitle, parseSkillFiles, parseSkillMd, type ParsedSkill } from './parse.js';
import { writeZip } from './zip.js';
import { resolveSkillRefs } from './refs.js';
import type {
  LoadedSkill,
  PinnedSkill,
  Skill,
  SkillDoc,
  SkillFileInput,
  SkillOrigin,
  SkillSource,
  SkillVersion,
  SkillVersionDoc,
} from './records.js';

/**
 * Skills (platform.skills): custom skills with versions in the store + object store, and the
 * built-ins (builtins.ts). Guarantees:
 * - tenancy: every read and write is scoped to the tenant; another tenant's id is a 404;
 * - nothing half-written: a version's objects are written first, then its version doc, then the
 *   skill doc (create) or the skill's latest pointer (new version); a failure deletes what was
 *   written, so no skill doc exists without its version and files;
 * - `name` (SKILL.md frontmatter) is immutable and unique per tenant (unique index), and no
 *   custom skill takes a built-in's name: it is the mount folder;
 * - versions are numeric epoch strings (microseconds), strictly increasing per skill; every
 *   change publishes one; the only version of a skill cannot be deleted; built-ins cannot be
 *   deleted or versioned.
 * Proved by test/e2e/skills/skills-api.test.ts, test/e2e/skills/skills-sdk.test.ts, test/e2e/sdk/sdk_suite/test_skills.py.
 *
 * Changes to the contract (c12): `list`/`listVersions` take `{limit, page, source}` and return
 * pages; `readFile`/`zipVersion` take a version or 'latest'; `zipVersion` returns `{name, zip}`.
 */
export interface SkillListQuery {
  limit?: number;
  page?: string;
  /** `vendor` (alias `anthropic`) or `custom`. */
  source?: SkillSource;
}
export interface SkillCreateMeta {
  display_title?: string;
  description?: string;
}

let lastVersion = 0;
/** A microsecond epoch strictly above `after` and above every version this process issued. */
function nextVersion(after?: string): string {
  const v = Math.max(Date.now() * 1000, lastVersion + 1, after ? Number(after) + 1 : 0);
  lastVersion = v;
  return String(v);
}

export class SkillService {
  readonly builtins: BuiltinSkills;
  constructor(
    private readonly c: Collections,
    private readonly objects: ObjectStore,
    builtins?: BuiltinSkills,
  ) {
    this.builtins = builtins ?? new BuiltinSkills();
  }

  /** Skill sources installing into this service (./sources/sources.ts); `close()` when done. */
  sources(config: Pick<Config, 'egress' | 'skillSources'>): SkillSourceService {
    return new SkillSourceService({ skills: this, c: this.c, config });
  }

  // ---- custom skills

  async create(
    tenant: string,
    files: SkillFileInput[],
    meta: SkillCreateMeta = {},
    origin?: SkillOrigin,
  ): Promise<Skill> {
    const displayTitle = checkDisplayTitle(meta.display_title, 'display_title');
    if (
      meta.description !== undefined &&
      (meta.description.length > 1024 || !meta.description.trim())
    )
      throw invalid('description', 'must be 1 to 1024 characters');
    const parsed = parseSkillFiles(files);
    if ((await this.builtins.names()).has(parsed.name))
      throw invalid('SKILL.md: name', `"${parsed.name}" is the name of a built-in skill`);
    await this.refuseDuplicateName(tenant, parsed.name);
    const id = `skill_${ulid()}`;
    const now = new Date().toISOString();
    const version = await this.writeVersion(tenant, id, nextVersion(), parsed, origin ?? null, now);
    const doc: Omit<SkillDoc, 'tenant_id'> = {
      _id: id,
      name: parsed.name,
      display_title: displayTitle ?? parsed.name,
      description: meta.description ?? parsed.description,
      latest_version: version.version,
      version_count: 1,
      origin: origin ?? null,
      created_at: now,
      updated_at: now,
    };
    try {
      await this.c.skills.insert(tenant, doc);
    } catch (err) {
      await this.discardVersion(tenant, version);
      if (err instanceof DuplicateKeyError) throw duplicateName(parsed.name);
      throw err;
    }
    return renderSkill({ ...doc, tenant_id: tenant });
  }

  async createVersion(
    tenant: string,
    skillId: string,
    files: SkillFileInput[],
    origin?: SkillOrigin,
  ): Promise<SkillVersion> {
    if (this.builtins.isBuiltinId(skillId))
      throw invalid('skill_id', `${skillId} is a built-in skill: it cannot get new versions`);
    const skill = await this.doc(tenant, skillId);
    const parsed = parseSkillFiles(files);
    if (parsed.name !== skill.name)
      throw invalid(
        'SKILL.md: name',
        `"${parsed.name}" differs from the skill's name "${skill.name}" (the name cannot change)`,
      );
    const now = new Date().toISOString();
    const v = await this.writeVersion(
      tenant,
      skillId,
      nextVersion(skill.latest_version),
      parsed,
      origin ?? skill.origin,
      now,
    );
    await this.c.skills.updateOne(tenant, { _id: skillId }, { $inc: { version_count: 1 } });
    const set: Record<string, unknown> = { latest_version: v.version, updated_at: now };
    set.description = parsed.description;
    if (origin) set.origin = origin;
    await this.c.skills.updateOne(
      tenant,
      { _id: skillId, latest_version: { $lt: v.version } },
      { $set: set },
    );
    // Deleted meanwhile: its versions are gone with it.
    if (!(await this.c.skills.get(tenant, skillId))) {
      await this.discardVersion(tenant, v);
      throw notFound('skill', skillId);
    }
    return renderVersion(v);
  }

  async get(tenant: string, id: string): Promise<Skill> {
    const b = await this.builtins.get(id);
    if (b) return b.skill;
    return renderSkill(await this.doc(tenant, id));
  }

  /** Built-ins first (in id order), then custom skills newest first; `page` continues. */
  async list(tenant: string, q: SkillListQuery = {}): Promise<Page<Skill>> {
    const limit = q.limit ?? 20;
    const cur = q.page ? decodeCursor(q.page, 'page') : null;
    const key = cur ? String(cur.k) : '';
    const out: Array<{ skill: Skill; key: string }> = [];
    if (q.source !== 'custom' && (!key || key.startsWith('b:'))) {
      for (const b of (await this.builtins.all()).values())
        if (!key || b.skill.id > key.slice(2)) out.push({ skill: b.skill, key: `b:${b.skill.id}` });
      out.sort((a, b) => (a.key < b.key ? -1 : 1));
    }
    if (q.source !== 'vendor' && out.length <= limit) {
      const filter = key.startsWith('c:') ? { _id: { $lt: key.slice(2) } } : {};
      const rows = await this.c.skills.find(tenant, filter, {
        sort: { _id: -1 },
        limit: limit + 1 - out.length,
      });
      for (const r of rows) out.push({ skill: renderSkill(r), key: `c:${r._id}` });
    }
    const data = out.slice(0, limit);
    const more = out.length > limit;
    const last = data[data.length - 1];
    return {
      data: data.map((d) => d.skill),
      has_more: more,
      next_page: more && last ? encodeCursor({ k: last.key, d: 'next' }) : null,
      prev_page: null,
      first_id: data[0]?.skill.id ?? null,
      last_id: last?.skill.id ?? null,
    };
  }

  /** Deletes a custom skill, its versions and files; built-ins are refused (400). */
  async delete(tenant: string, id: string): Promise<{ id: string; type: 'skill_deleted' }> {
    if (this.builtins.isBuiltinId(id))
      throw invalid('skill_id', `${id} is a built-in skill and cannot be deleted`);
    await this.doc(tenant, id);
    await this.c.skills.deleteOne(tenant, { _id: id });
    const versions = await this.c.skillVersions.find(tenant, { skill_id: id });
    for (const v of versions) await this.deleteObjects(v);
    await this.c.skillVersions.deleteMany(tenant, { skill_id: id });
    return { id, type: 'skill_deleted' };
  }

  // ---- versions

  async listVersions(
    tenant: string,
    id: string,
    q: { limit?: number; page?: string } = {},
  ): Promise<Page<SkillVersion>> {
    const b = await this.builtins.get(id);
    if (b)
      return {
        data: q.page ? [] : [b.version],
        has_more: false,
        next_page: null,
        prev_page: null,
        first_id: q.page ? null : b.version.id,
        last_id: q.page ? null : b.version.id,
      };
    await this.doc(tenant, id);
    const page = await pageById(this.c.skillVersions, tenant, { skill_id: id }, q);
    return { ...page, data: page.data.map(renderVersion), prev_page: null };
  }

  async getVersion(tenant: string, id: string, version: string): Promise<SkillVersion> {
    const b = await this.builtins.get(id);
    if (b) {
      if (version !== b.version.version && version !== 'latest')
        throw notFound('skill version', version);
      return b.version;
    }
    return renderVersion(await this.versionDoc(tenant, id, version));
  }

  async deleteVersion(
    tenant: string,
    id: string,
    version: string,
  ): Promise<{ id: string; type: 'skill_version_deleted' }> {
    if (this.builtins.isBuiltinId(id))
      throw invalid('skill_id', `${id} is a built-in skill: its version cannot be deleted`);
    const v = await this.versionDoc(tenant, id, version);
    // Reserved atomically: two concurrent deletes cannot remove the last two versions.
    const reserved = await this.c.skills.findOneAndUpdate(
      tenant,
      { _id: id, version_count: { $gt: 1 } },
      { $inc: { version_count: -1 } },
    );
    if (!reserved)
      throw invalid(
        'version',
        `${v.version} is the only version of ${id}: delete the skill instead (DELETE /v1/skills/${id})`,
      );
    await this.c.skillVersions.deleteOne(tenant, { _id: v._id });
    const [newest] = await this.c.skillVersions.find(
      tenant,
      { skill_id: id },
      { sort: { _id: -1 }, limit: 1 },
    );
    if (newest)
      await this.c.skills.updateOne(
        tenant,
        { _id: id, latest_version: v.version },
        {
          $set: {
            latest_version: newest.version,
            description: newest.description,
            updated_at: new Date().toISOString(),
          },
        },
      );
    await this.deleteObjects(v);
    return { id: v.version, type: 'skill_version_deleted' };
  }

  /** One file of a version ('latest' or omitted: the newest). */
  async readFile(tenant: string, id: string, version: string | undefined, filename: string) {
    const loaded = await this.loadVersion(tenant, id, version ?? 'latest', [filename]);
    const f = loaded.files.find((x) => x.filename === filename);
    if (!f) throw notFound('skill file', filename);
    return f.data;
  }

  /** A version as a zip with every file under `<name>/`. */
  async zipVersion(tenant: string, id: string, version: string) {
    const loaded = await this.loadVersion(tenant, id, version);
    return { name: loaded.name, version: loaded.version, zip: writeZip(loaded.name, loaded.files) };
  }

  // ---- sessions (S2) and skill sources (S4)

  /** Validates agent refs (400s naming `${field}[i]...`) and pins each version. */
  resolveRefs(
    tenant: string,
    refs: Array<{ type: string; skill_id: string; version?: string | null }>,
    field = 'skills',
  ): Promise<PinnedSkill[]> {
    return resolveSkillRefs(this, tenant, refs, field);
  }

  /** Files and body of a pinned version (works after newer versions were published). */
  async load(tenant: string, pinned: PinnedSkill): Promise<LoadedSkill> {
    const loaded = await this.loadVersion(tenant, pinned.skill_id, pinned.version);
    return { ...loaded, type: pinned.type };
  }

  async findByOrigin(tenant: string, url: string, name: string): Promise<Skill | null> {
    const doc = await this.c.skills.findOne(tenant, { name });
    return doc && doc.origin?.url === url ? renderSkill(doc) : null;
  }

  /** The stored origin ({url, digest}) of a custom skill, or null. */
  async originOf(tenant: string, id: string): Promise<SkillOrigin | null> {
    return (await this.doc(tenant, id)).origin;
  }

  // ---- internals

  private async doc(tenant: string, id: string): Promise<SkillDoc> {
    const doc = await this.c.skills.get(tenant, id);
    if (!doc) throw notFound('skill', id);
    return doc;
  }

  private async versionDoc(tenant: string, id: string, version: string) {
    const skill = await this.doc(tenant, id);
    const v = version === 'latest' ? skill.latest_version : version;
    const doc = await this.c.skillVersions.get(tenant, `${id}/${v}`);
    if (!doc) throw notFound('skill version', version);
    return doc;
  }

  /** Every file (or only `only`) of a version, SKILL.md body parsed. */
  private async loadVersion(
    tenant: string,
    id: string,
    version: string,
    only?: string[],
  ): Promise<LoadedSkill> {
    const b = await this.builtins.get(id);
    if (b) {
      if (version !== b.version.version && version !== 'latest')
        throw notFound('skill version', version);
      return b.loaded;
    }
    const v = await this.versionDoc(tenant, id, version);
    const wanted = v.files.filter(
      (f) => !only || only.includes(f.filename) || f.filename === 'SKILL.md',
    );
    const files: LoadedSkill['files'] = [];
    for (const f of wanted) {
      const data = await this.objects.get(f.key);
      if (!data)
        throw new ApiError('internal_error', `skill ${id} version ${v.version}: a file is missing`);
      files.push({ filename: f.filename, data });
    }
    const md = files.find((f) => f.filename === 'SKILL.md');
    const body = md ? parseSkillMd(Buffer.from(md.data).toString('utf8')).body : '';
    return { type: 'custom', skill_id: id, version: v.version, name: v.name, body, files };
  }

  private async refuseDuplicateName(tenant: string, name: string) {
    if (await this.c.skills.findOne(tenant, { name })) throw duplicateName(name);
  }

  /** Objects first, then the version doc; on failure nothing stays. */
  private async writeVersion(
    tenant: string,
    skillId: string,
    version: string,
    parsed: ParsedSkill,
    origin: SkillOrigin | null,
    now: string,
  ): Promise<SkillVersionDoc> {
    const doc: SkillVersionDoc = {
      _id: `${skillId}/${version}`,
      tenant_id: tenant,
      skill_id: skillId,
      version,
      name: parsed.name,
      description: parsed.description,
      files: parsed.files.map((f, i) => ({
        filename: f.filename,
        size_bytes: f.content.byteLength,
        key: `skills/${tenant}/${skillId}/${version}/${i}`,
      })),
      origin,
      created_at: now,
    };
    try {
      for (const [i, f] of parsed.files.entries())
        await this.objects.put(doc.files[i]!.key, f.content);
      await this.c.skillVersions.insert(tenant, doc);
    } catch (err) {
      await this.deleteObjects(doc);
      throw err;
    }
    return doc;
  }

  private async discardVersion(tenant: string, v: SkillVersionDoc) {
    await this.c.skillVersions.deleteOne(tenant, { _id: v._id }).catch(() => {});
    await this.deleteObjects(v);
  }

  private async deleteObjects(v: SkillVersionDoc) {
    for (const f of v.files) await this.objects.delete(f.key).catch(() => {});
  }
}

const duplicateName = (name: string) =>
  invalid(
    'SKILL.md: name',
    `a skill named "${name}" already exists (the name is the mount folder: it must be unique); publish a new version of it instead`,
  );

export function renderSkill(d: SkillDoc): Skill {
  return {
    type: 'skill',
    id: d._id,
    display_title: d.display_title,
    display_name: d.display_title,
    name: d.name,
    description: d.description,
    source: 'custom',
    latest_version: d.latest_version,
    latest_version_id: d.latest_version,
    created_at: d.created_at,
    updated_at: d.updated_at,
  };
}

export function renderVersion(v: SkillVersionDoc): SkillVersion {
  return {
    type: 'skill_version',
    id: v.version,
    version: v.version,
    skill_id: v.skill_id,
    name: v.name,
    description: v.description,
    files: v.files.map((f) => ({ filename: f.filename, size_bytes: f.size_bytes })),
    created_at: v.created_at,
  };
}
