/**
 * A session's skills: what the agent's `skills` refs become once a
 * session pins them. Guarantees:
 * - refs bind only in object form `{type, skill_id, version?}` (`vendor` is the spec's name of
 *   `anthropic`); a bare string is a 400 naming `skills[i]`; the refs are validated by the
 *   skill service (unknown or other tenant's id, unknown version, duplicate mount name, more
 *   than 20: a 400 naming e.g. `skills[1].skill_id`) on agent create/update and on a session's
 *   `agent_with_overrides.skills` (named `agent.skills[i]…`);
 * - a session pins every ref at creation (omitted / `latest` → the latest version then): the
 *   pinned list is stored in the session's agent snapshot and never changes, so a newer skill
 *   version or an agent update leaves a running session on the versions it started with;
 * - at warmup each pinned skill's files are written at /home/user/.skills/{name}/ (the SKILL.md
 *   name, not the id) through the sandbox resource list; a skill that cannot be loaded fails the
 *   warmup like any declared resource;
 * - the system prompt of every model request is the agent's prompt followed, for each pinned
 *   skill in order, by exactly
 *   `<source name="skill:{id}"><skill name="{name}">{SKILL.md body}</skill></source>`,
 *   separated by blank lines; bodies come from the pinned versions (immutable), nothing is
 *   read lazily by the model;
 * - self_hosted sessions get the prompt but no mount (the platform runs no sandbox for them):
 *   their worker downloads the declared skills with its claimed-session bearer.
 * Proved by test/e2e/skills/skills-session.test.ts and test/e2e/skills/skills-session-work.test.ts.
 */
import { invalid } from '../errors.js';
import type { SandboxResource } from '../sandbox/manager/types.js';
import type { LoadedSkill, PinnedSkill } from '../skills/records.js';

export type { LoadedSkill, PinnedSkill };

/** Where a pinned skill's files are mounted in the sandbox: `${SKILLS_MOUNT_ROOT}/{name}/`. */
export const SKILLS_MOUNT_ROOT = '/home/user/.skills';

/** A skill ref as an agent stores it (SDK BetaManagedAgentsSkillParams). */
export interface SkillRefObject {
  type: 'anthropic' | 'custom';
  skill_id: string;
  version: string;
}

/** What this module needs of the skill service (core/src/skills/skills.ts). */
export interface SessionSkillSource {
  resolveRefs(
    tenant: string,
    refs: Array<{ type: string; skill_id: string; version?: string | null }>,
    field?: string,
  ): Promise<PinnedSkill[]>;
  load(tenant: string, pinned: PinnedSkill): Promise<LoadedSkill>;
}

/**
 * The stored form of an agent's `skills`: object refs with `vendor` → `anthropic` and an
 * omitted version → `latest`. A bare string (the spec: "does not bind") is a 400 naming it.
 */
export function normalizeSkillRefs(
  skills: readonly unknown[] | null | undefined,
  field = 'skills',
): SkillRefObject[] {
  return (skills ?? []).map((s, i) => {
    if (typeof s !== 'object' || s === null)
      throw invalid(
        `${field}[${i}]`,
        `a bare skill id does not bind a skill; send an object {type: 'custom' | 'anthropic', skill_id, version?}`,
      );
    const ref = s as { type: string; skill_id: string; version?: string | null };
    return {
      type: ref.type === 'vendor' || ref.type === 'anthropic' ? 'anthropic' : 'custom',
      skill_id: ref.skill_id,
      version: ref.version ?? 'latest',
    };
  });
}

/** Pins refs (see SessionSkillSource.resolveRefs); `latest` is sent as "no version". */
export async function pinSkills(
  source: SessionSkillSource | null,
  tenant: string,
  refs: readonly SkillRefObject[],
  field = 'skills',
): Promise<PinnedSkill[]> {
  if (!refs.length) return [];
  if (!source) throw invalid(field, 'skills are not available in this deployment');
  return source.resolveRefs(
    tenant,
    refs.map((r) => ({
      type: r.type,
      skill_id: r.skill_id,
      version: r.version === 'latest' ? null : r.version,
    })),
    field,
  );
}

/** The refs a session's agent shows: each with the version the session pinned. */
export const pinnedRefs = (pinned: readonly PinnedSkill[]): SkillRefObject[] =>
  pinned.map((p) => ({ type: p.type, skill_id: p.skill_id, version: p.version }));

/** One pinned skill's prompt section, exactly as the spec words it. */
export const skillPromptSection = (s: Pick<LoadedSkill, 'skill_id' | 'name' | 'body'>): string =>
  `<source name="skill:${s.skill_id}"><skill name="${s.name}">${s.body}</skill></source>`;

/** The agent's system prompt followed by each skill's section, blank-line separated. */
export function systemWithSkills(
  system: string | null | undefined,
  skills: ReadonlyArray<Pick<LoadedSkill, 'skill_id' | 'name' | 'body'>>,
): string | undefined {
  const parts = [...(system ? [system] : []), ...skills.map(skillPromptSection)];
  return parts.length ? parts.join('\n\n') : undefined;
}

/** The sandbox resources of a session's pinned skills: every file under its mount folder. */
export async function skillResources(
  source: SessionSkillSource,
  tenant: string,
  pinned: readonly PinnedSkill[],
): Promise<SandboxResource[]> {
  const out: SandboxResource[] = [];
  for (const p of pinned) {
    let loaded: LoadedSkill;
    try {
      loaded = await source.load(tenant, p);
    } catch (err) {
      throw new Error(
        `skill ${p.skill_id} version ${p.version} (pinned by this session) could not be loaded: ${(err as Error)?.message ?? String(err)}`,
      );
    }
    for (const f of loaded.files) {
      const data = f.data;
      out.push({ path: `${SKILLS_MOUNT_ROOT}/${p.name}/${f.filename}`, data: async () => data });
    }
  }
  return out;
}
