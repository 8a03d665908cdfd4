/**
 * Skill sources: discover, install, check-updates, update and list installed skills of a
 * tenant (`/v1/svc/skill-sources/*`, gateway/src/routes/skillSources.ts). Shapes:
 * schemas/src/skillSources.ts.
 *
 * Guarantees (proved by test/e2e/skills/skill-sources.test.ts):
 * - an installed skill is an ordinary custom skill (platform.skills) whose only record of its
 *   source is `{url, digest}` (spec Skill rule 4): `url` is the index URL it was found at;
 * - install fetches and verifies EVERY requested skill (digest, archive limits, SKILL.md) and
 *   checks every name before writing anything: one bad skill is a 400 naming it
 *   (`skills[i]`) and nothing is installed; a name already used by a skill not installed from
 *   this source (or a built-in) is a 400; writes that still fail (store errors, a race on the name)
 *   are rolled back (not covered by a test);
 * - installing again: same digest → `unchanged` (no new version); another digest → a new
 *   version of the same skill (`updated`);
 * - check-updates reports `up_to_date`, `update_available`, `removed` (gone from the index:
 *   the skill is KEPT) or `unreachable`; update publishes the changed ones as new versions
 *   (all fetched and verified before any is written);
 * - `skill_ids` naming another tenant's or an unknown skill is a 404 (ids of other tenants
 *   look like unknown ids); a skill not installed from a source, or a built-in, is a 400.
 */
import type { Config } from '../../config/config.js';
import type { Collections } from '../../store/collections.js';
import { invalid, notFound } from '../../errors.js';
import type { SkillDoc, SkillOrigin } from '../records.js';
import type { SkillService } from '../skills.js';
import { fetchSkill, type FetchedSkill } from './artifacts.js';
import { loadIndex, type IndexEntry, type SourceIndex } from './discoveryIndex.js';
import { SourceFetcher } from './fetch.js';

export type OfferType = 'skill-md' | 'archive' | 'files';
export interface InstallOutcome {
  skill_id: string;
  name: string;
  status: 'installed' | 'updated' | 'unchanged';
  version: string;
  digest: string;
}
export interface CheckOutcome {
  skill_id: string;
  name: string;
  source: string;
  digest: string;
  status: 'up_to_date' | 'update_available' | 'updated' | 'removed' | 'unreachable';
  available_digest: string | null;
  version: string;
  error: string | null;
}

/** Installed skills one call considers at most. */
const MAX_INSTALLED = 1000;

export class SkillSourceService {
  private readonly http: SourceFetcher;

  constructor(
    private readonly d: {
      skills: SkillService;
      c: Collections;
      config: Pick<Config, 'egress' | 'skillSources'>;
      timeoutMs?: number;
    },
  ) {
    this.http = new SourceFetcher({
      allowHosts: [...d.config.egress.allowPrivateHosts, ...d.config.skillSources.allowHosts],
      caCertsFile: d.config.egress.caCertsFile,
      timeoutMs: d.timeoutMs,
    });
  }

  close(): Promise<void> {
    return this.http.close();
  }

  async discover(tenant: string, url: string) {
    const index = await loadIndex(this.http, url);
    const installed = new Map(
      (await this.installedDocs(tenant))
        .filter((d) => d.origin?.url === index.url)
        .map((d) => [d.name, d._id]),
    );
    const skills = index.skills.map((e) => ({
      name: e.name,
      description: e.description,
      type: e.type as OfferType,
      digest: e.type === 'files' ? null : e.digest,
      installed_skill_id: installed.get(e.name) ?? null,
    }));
    return { source: index.url, skills };
  }

  async install(tenant: string, url: string, names: string[]) {
    names.forEach((n, i) => {
      if (names.indexOf(n) !== i) throw invalid(`skills[${i}]`, `'${n}' is listed twice`);
    });
    const index = await loadIndex(this.http, url);
    const builtinNames = await this.d.skills.builtins.names();
    type Plan = { name: string; existing: SkillDoc | null; fetched: FetchedSkill | null };
    const plans: Plan[] = [];
    // 1. Everything fetched, verified and checked; nothing written yet.
    for (const [i, name] of names.entries()) {
      const field = `skills[${i}]`;
      const entry = index.skills.find((e) => e.name === name);
      if (!entry) throw invalid(field, `'${name}' is not offered by ${index.url}`);
      const existing = await this.d.c.skills.findOne(tenant, { name });
      if (existing && existing.origin?.url !== index.url)
        throw invalid(
          field,
          `a skill named '${name}' already exists (${existing._id}) and was not installed from ${index.url}`,
        );
      if (builtinNames.has(name)) throw invalid(field, `'${name}' is the name of a built-in skill`);
      if (existing && entry.type !== 'files' && existing.origin?.digest === entry.digest) {
        plans.push({ name, existing, fetched: null });
        continue;
      }
      plans.push({ name, existing, fetched: await fetchSkill(this.http, entry, field) });
    }
    // 2. Written; a failure undoes what this call wrote.
    const done: InstallOutcome[] = [];
    const undo: Array<() => Promise<unknown>> = [];
    try {
      for (const p of plans) {
        if (!p.fetched || p.existing?.origin?.digest === p.fetched.digest) {
          done.push(outcome(p.existing!, 'unchanged', p.existing!.latest_version));
          continue;
        }
        const origin: SkillOrigin = { url: index.url, digest: p.fetched.digest };
        if (p.existing) {
          const v = await this.d.skills.createVersion(
            tenant,
            p.existing._id,
            p.fetched.files,
            origin,
          );
          undo.push(() => this.d.skills.deleteVersion(tenant, p.existing!._id, v.version));
          done.push({ ...outcome(p.existing, 'updated', v.version), digest: origin.digest });
        } else {
          const s = await this.d.skills.create(tenant, p.fetched.files, {}, origin);
          undo.push(() => this.d.skills.delete(tenant, s.id));
          done.push({
            skill_id: s.id,
            name: s.name,
            status: 'installed',
            version: s.latest_version,
            digest: origin.digest,
          });
        }
      }
    } catch (err) {
      for (const u of undo.reverse()) await u().catch(() => {});
      throw err;
    }
    return { source: index.url, skills: done };
  }

  /** Compares installed skills (all, or `skillIds`) with their sources. */
  async checkUpdates(
    tenant: string,
    skillIds?: string[] | null,
  ): Promise<{ data: CheckOutcome[] }> {
    const { data } = await this.compare(tenant, skillIds);
    return { data: data.map((c) => c.check) };
  }

  /** Publishes a new version of every changed installed skill (all, or `skillIds`). */
  async update(tenant: string, skillIds?: string[] | null): Promise<{ data: CheckOutcome[] }> {
    const { data } = await this.compare(tenant, skillIds);
    // every changed skill fetched and verified before any is written
    const fetched = new Map<string, FetchedSkill>();
    for (const c of data) {
      if (c.check.status !== 'update_available') continue;
      fetched.set(c.doc._id, c.fetched ?? (await fetchSkill(this.http, c.entry!, c.field)));
    }
    const out: CheckOutcome[] = [];
    for (const c of data) {
      const f = fetched.get(c.doc._id);
      if (!f) {
        out.push(c.check);
        continue;
      }
      const origin = { url: c.check.source, digest: f.digest };
      const v = await this.d.skills.createVersion(tenant, c.doc._id, f.files, origin);
      out.push({ ...c.check, status: 'updated', digest: f.digest, version: v.version });
    }
    return { data: out };
  }

  async installed(tenant: string) {
    const docs = await this.installedDocs(tenant);
    return {
      data: docs.map((d) => ({
        skill_id: d._id,
        name: d.name,
        source: d.origin!.url,
        digest: d.origin!.digest,
        latest_version: d.latest_version,
      })),
    };
  }

  // ---- internals

  private async installedDocs(tenant: string): Promise<SkillDoc[]> {
    return this.d.c.skills.find(
      tenant,
      { origin: { $ne: null } },
      { sort: { _id: 1 }, limit: MAX_INSTALLED },
    );
  }

  /** The selected installed skills, each compared with its source's index. */
  private async compare(tenant: string, skillIds?: string[] | null) {
    let docs: SkillDoc[];
    const fields = new Map<string, string>();
    if (skillIds) {
      docs = [];
      for (const [i, id] of skillIds.entries()) {
        const field = `skill_ids[${i}]`;
        if (this.d.skills.builtins.isBuiltinId(id))
          throw invalid(field, `${id} is a built-in skill, not installed from a source`);
        const doc = await this.d.c.skills.get(tenant, id);
        if (!doc) throw notFound('skill', id);
        if (!doc.origin) throw invalid(field, `${id} was not installed from a skill source`);
        if (!fields.has(id)) docs.push(doc);
        fields.set(id, field);
      }
    } else docs = await this.installedDocs(tenant);
    const indexes = new Map<string, SourceIndex | Error>();
    const data: Array<{
      doc: SkillDoc;
      check: CheckOutcome;
      entry: IndexEntry | null;
      fetched: FetchedSkill | null;
      field: string;
    }> = [];
    for (const doc of docs) {
      const origin = doc.origin!;
      const field = fields.get(doc._id) ?? 'skill_ids';
      if (!indexes.has(origin.url))
        indexes.set(
          origin.url,
          await loadIndex(this.http, origin.url, 'source').catch((err: Error) => err),
        );
      const index = indexes.get(origin.url)!;
      const base: CheckOutcome = {
        skill_id: doc._id,
        name: doc.name,
        source: origin.url,
        digest: origin.digest,
        status: 'up_to_date',
        available_digest: null,
        version: doc.latest_version,
        error: null,
      };
      if (index instanceof Error) {
        data.push({
          doc,
          check: { ...base, status: 'unreachable', error: index.message },
          entry: null,
          fetched: null,
          field,
        });
        continue;
      }
      const entry = index.skills.find((e) => e.name === doc.name) ?? null;
      if (!entry) {
        data.push({ doc, check: { ...base, status: 'removed' }, entry, fetched: null, field });
        continue;
      }
      // v0.1 entries carry no digest: their files are fetched to compute it
      let fetched: FetchedSkill | null = null;
      let available: string;
      if (entry.type === 'files') {
        try {
          fetched = await fetchSkill(this.http, entry, field);
        } catch (err) {
          data.push({
            doc,
            check: { ...base, status: 'unreachable', error: (err as Error).message },
            entry,
            fetched: null,
            field,
          });
          continue;
        }
        available = fetched.digest;
      } else available = entry.digest;
      const changed = available !== origin.digest;
      data.push({
        doc,
        check: changed
          ? { ...base, status: 'update_available', available_digest: available }
          : base,
        entry,
        fetched,
        field,
      });
    }
    return { data };
  }
}

function outcome(doc: SkillDoc, status: InstallOutcome['status'], version: string): InstallOutcome {
  return {
    skill_id: doc._id,
    name: doc.name,
    status,
    version,
    digest: doc.origin!.digest,
  };
}
