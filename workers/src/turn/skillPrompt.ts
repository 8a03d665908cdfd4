/**
 * The system prompt a session's model requests carry: the agent's prompt followed by the full
 * SKILL.md body of each skill the session pinned at creation, in order, each wrapped exactly as
 * `<source name="skill:{id}"><skill name="{name}">{body}</skill></source>` (blank-line
 * separated; core/src/sessions/skills.ts systemWithSkills). Guarantees:
 * - the bodies are read at the start of every turn from the PINNED versions (versions are
 *   immutable), so a newer skill version never reaches a running session, and nothing is left
 *   for the model to read lazily; both provider protocols get the same system text;
 * - a pinned skill that cannot be loaded (deleted since the session started) ends the turn
 *   before any model call with a terminal session.error naming the skill and version.
 * Proved by test/e2e/skills/skills-session.test.ts (captured model requests, both protocols).
 */
import { systemWithSkills, type SessionDoc } from '@agentfleet/core';
import type { WorkerServices } from '../services.js';

/** A pinned skill that could not be loaded; `message` names it. */
export class SkillLoadError extends Error {
  override readonly name = 'SkillLoadError';
}

/** The session with its agent's `system` replaced by the prompt with its skills inlined. */
export async function withSkillPrompt(
  p: Pick<WorkerServices, 'skills'>,
  tenant: string,
  s: SessionDoc,
): Promise<SessionDoc> {
  const pinned = s.agent.pinned_skills ?? [];
  if (!pinned.length) return s;
  const loaded = [];
  for (const skill of pinned) {
    try {
      loaded.push(await p.skills.load(tenant, skill));
    } catch (err) {
      throw new SkillLoadError(
        `skill ${skill.skill_id} version ${skill.version} (pinned by this session as ${skill.name}) could not be loaded: ${(err as Error)?.message ?? String(err)}`,
      );
    }
  }
  return { ...s, agent: { ...s.agent, system: systemWithSkills(s.agent.system, loaded) ?? null } };
}
