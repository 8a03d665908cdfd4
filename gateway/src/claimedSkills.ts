/**
 * The claimed-session bearer's "agent skill" capability (spec, claimed-session table: "list
 * versions and download only skills declared by the session's agent"): on the skill routes
 * below, the skill must be one the claimed session's agent declares (its pinned `skills`);
 * any other skill → 403. Skill listing, metadata, create, version create and delete stay
 * outside the capability. A self_hosted worker fetches its session's skills this way: the
 * platform runs no sandbox for it, so nothing is mounted (core/src/sessions/skills.ts).
 * Proved by test/e2e/skills/skills-session-work.test.ts.
 */
import { ApiError, type SessionClaim, type WorkService } from '@agentfleet/core';

/** `METHOD url` of the skill routes a claimed-session bearer may use (gateway/src/routes/skills.ts). */
export const CLAIMED_SKILL_ROUTES = new Set([
  'GET /v1/skills/:id/versions',
  'GET /v1/skills/:id/versions/:version',
  'GET /v1/skills/:id/versions/:version/content',
  'GET /v1/skills/:id/files/:filename',
  'GET /v1/skills/:id/files/*',
]);

/** Throws 403 unless `skillId` is declared by the claimed session's agent. */
export async function checkClaimedSkill(
  work: Pick<WorkService, 'claimedSession'>,
  claim: SessionClaim,
  skillId: string,
): Promise<void> {
  const s = await work.claimedSession(claim);
  const declared = (s?.agent?.skills ?? []).some((r) => r.skill_id === skillId);
  if (!declared)
    throw new ApiError(
      'forbidden',
      "a claimed-session bearer may not read a skill the claimed session's agent does not declare",
    );
}
