import { ApiError, invalid } from '../errors.js';
import type { PinnedSkill } from './records.js';
import type { SkillService } from './skills.js';

/** The SDK's limit: at most this many skills per agent. */
export const MAX_AGENT_SKILLS = 20;

/**
 * Agent skill refs → pinned versions (SkillService.resolveRefs). Each problem is a 400 naming
 * `${field}[i].<key>`: more than 20 refs, a type other than `custom`/`anthropic` (alias
 * `vendor`), an unknown id or another tenant's id, an unknown version, two skills with the same
 * name (their mount folders would collide). Version omitted, null or 'latest' pins the latest
 * now. A built-in id resolves whatever the given type; the pin carries its real type.
 */
export async function resolveSkillRefs(
  skills: SkillService,
  tenant: string,
  refs: Array<{ type: string; skill_id: string; version?: string | null }>,
  field: string,
): Promise<PinnedSkill[]> {
  if (!Array.isArray(refs)) throw invalid(field, 'must be an array of {type, skill_id, version?}');
  if (refs.length > MAX_AGENT_SKILLS)
    throw invalid(field, `at most ${MAX_AGENT_SKILLS} skills (got ${refs.length})`);
  const out: PinnedSkill[] = [];
  const names = new Map<string, number>();
  for (const [i, ref] of refs.entries()) {
    const at = `${field}[${i}]`;
    if (!ref || typeof ref !== 'object')
      throw invalid(at, 'must be an object {type, skill_id, version?}');
    if (!['custom', 'anthropic', 'vendor'].includes(ref.type))
      throw invalid(`${at}.type`, "must be 'custom' or 'anthropic' (alias 'vendor')");
    if (typeof ref.skill_id !== 'string' || ref.skill_id === '')
      throw invalid(`${at}.skill_id`, 'is required');
    const builtin = await skills.builtins.get(ref.skill_id);
    if (!builtin && ref.type !== 'custom')
      throw invalid(`${at}.skill_id`, `${ref.skill_id} is not a built-in skill`);
    const want = ref.version === undefined || ref.version === null ? 'latest' : ref.version;
    if (typeof want !== 'string') throw invalid(`${at}.version`, 'must be a string');
    let pinned: PinnedSkill;
    try {
      const v = await skills.getVersion(tenant, ref.skill_id, want);
      pinned = {
        type: builtin ? 'anthropic' : 'custom',
        skill_id: ref.skill_id,
        version: v.version,
        name: v.name,
      };
    } catch (err) {
      if (!(err instanceof ApiError) || err.type !== 'not_found') throw err;
      const known = await skills.get(tenant, ref.skill_id).then(
        () => true,
        () => false,
      );
      throw known
        ? invalid(`${at}.version`, `${ref.skill_id} has no version ${want}`)
        : invalid(`${at}.skill_id`, `no skill ${ref.skill_id}`);
    }
    const prev = names.get(pinned.name);
    if (prev !== undefined)
      throw invalid(
        `${at}.skill_id`,
        `skill name "${pinned.name}" is also ${field}[${prev}]'s: mount folders must be unique`,
      );
    names.set(pinned.name, i);
    out.push(pinned);
  }
  return out;
}
