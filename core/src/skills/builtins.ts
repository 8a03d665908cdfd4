import { promises as fsp } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSkillFiles } from './parse.js';
import type { LoadedSkill, Skill, SkillVersion } from './records.js';

/**
 * The built-in skills (source `vendor`, the SDK's `anthropic`): `xlsx`, `pdf`, `docx`, `pptx`,
 * read from the core package's `skills/<id>/` directory (content in core/skills; found relative
 * to this module, which sits two levels below the package root both as core/src/skills/*.ts and
 * as core/dist/skills/*.js). id = directory name; one version, BUILTIN_VERSION; listed for every
 * tenant; read-only (delete and new versions are refused by the service). Loaded once per
 * process, on first use. A directory without a valid SKILL.md is not served (and is reported by
 * `problems`). Proved by test/e2e/skills/skills-api.test.ts "built-in skills".
 */
export const BUILTIN_SKILL_IDS = ['xlsx', 'pdf', 'docx', 'pptx'] as const;
/** 2026-04-01T00:00:00Z in microseconds: the one version of every built-in skill. */
export const BUILTIN_VERSION = '1775001600000000';
const BUILTIN_CREATED_AT = '2026-04-01T00:00:00.000Z';

export const builtinSkillsDir = () => fileURLToPath(new URL('../../skills/', import.meta.url));

export interface BuiltinSkill {
  skill: Skill;
  version: SkillVersion;
  loaded: LoadedSkill;
}

/** Files under `dir`, relative and '/'-separated; dotfiles and __pycache__ skipped. */
async function readTree(
  dir: string,
  prefix = '',
): Promise<Array<{ filename: string; content: Uint8Array }>> {
  const out: Array<{ filename: string; content: Uint8Array }> = [];
  const entries = await fsp.readdir(dir, { withFileTypes: true });
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const e of entries) {
    if (e.name.startsWith('.') || e.name === '__pycache__' || e.name === 'node_modules') continue;
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await readTree(join(dir, e.name), rel)));
    else if (e.isFile())
      out.push({ filename: rel, content: await fsp.readFile(join(dir, e.name)) });
  }
  return out;
}

export class BuiltinSkills {
  private loading: Promise<Map<string, BuiltinSkill>> | null = null;
  readonly problems: string[] = [];
  constructor(private readonly dir: string = builtinSkillsDir()) {}

  isBuiltinId(id: string): boolean {
    return (BUILTIN_SKILL_IDS as readonly string[]).includes(id);
  }

  all(): Promise<Map<string, BuiltinSkill>> {
    return (this.loading ??= this.load());
  }
  async get(id: string): Promise<BuiltinSkill | null> {
    return this.isBuiltinId(id) ? ((await this.all()).get(id) ?? null) : null;
  }
  /** Frontmatter names of the built-ins (a custom skill may not take one). */
  async names(): Promise<Set<string>> {
    const names = new Set<string>(BUILTIN_SKILL_IDS);
    for (const b of (await this.all()).values()) names.add(b.skill.name);
    return names;
  }

  private async load(): Promise<Map<string, BuiltinSkill>> {
    const out = new Map<string, BuiltinSkill>();
    for (const id of BUILTIN_SKILL_IDS) {
      try {
        const parsed = parseSkillFiles(await readTree(join(this.dir, id)));
        const skill: Skill = {
          type: 'skill',
          id,
          display_title: id,
          display_name: id,
          name: parsed.name,
          description: parsed.description,
          source: 'vendor',
          latest_version: BUILTIN_VERSION,
          latest_version_id: BUILTIN_VERSION,
          created_at: BUILTIN_CREATED_AT,
          updated_at: BUILTIN_CREATED_AT,
        };
        const files = parsed.files.map((f) => ({ filename: f.filename, data: f.content }));
        out.set(id, {
          skill,
          version: {
            type: 'skill_version',
            id: BUILTIN_VERSION,
            version: BUILTIN_VERSION,
            skill_id: id,
            name: parsed.name,
            description: parsed.description,
            files: files.map((f) => ({ filename: f.filename, size_bytes: f.data.byteLength })),
            created_at: BUILTIN_CREATED_AT,
          },
          loaded: {
            type: 'anthropic',
            skill_id: id,
            version: BUILTIN_VERSION,
            name: parsed.name,
            body: parsed.body,
            files,
          },
        });
      } catch (err) {
        this.problems.push(`built-in skill ${id}: ${(err as Error).message}`);
      }
    }
    return out;
  }
}
