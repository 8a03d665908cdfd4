/**
 * The served session (SDK BetaManagedAgentsSession plus the spec's extensions) and the
 * `session.updated` payload made from two of them.
 * Guarantees: the agent is served as the session's snapshot (id, version and spec; the pinned
 * skills stay internal: the served skill refs already name the pinned versions); `status` is
 * derived on each read (./status.ts), never stored; `deployment_id` only on a session a
 * deployment started. Proved by test/e2e/api/contract-shapes.test.ts,
 * test/e2e/sessions/session-stats.test.ts and test/e2e/api/metadata-updates.test.ts.
 */
import { renderOutcomes } from '../outcomes/index.js';
import { renderSpec } from '../agents/agents.js';
import type { SessionDoc } from './records.js';
import { renderUsage } from './budget.js';
import { deriveStatus, renderStats } from './status.js';
import { renderThreadAgent } from '../threads/threads.js';

type RenderedSession = ReturnType<typeof renderSession>;
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/**
 * The `session.updated` payload (SDK BetaManagedAgentsSessionUpdatedEvent): title, budget and
 * agent only when changed; metadata (the whole bag) when changed and not empty; null when
 * nothing changed (no event). Proved by
 * test/e2e/api/metadata-updates.test.ts.
 */
export function sessionChanges(
  before: RenderedSession,
  after: RenderedSession,
): Record<string, unknown> | null {
  const out: Record<string, unknown> = {};
  let changed = false;
  if (before.title !== after.title) ((out.title = after.title), (changed = true));
  if (!same(before.budget, after.budget)) ((out.budget = after.budget), (changed = true));
  if (!same(before.metadata, after.metadata)) {
    changed = true;
    if (Object.keys(after.metadata).length) out.metadata = after.metadata;
  }
  if (!same(before.agent, after.agent)) ((out.agent = after.agent), (changed = true));
  return changed ? out : null;
}

export function renderSession(s: SessionDoc, hasRun: boolean | 'rescheduling') {
  // pinned_skills stays internal: the served refs already show the pinned versions.
  const { id: _aid, version: _v, pinned_skills: _ps, ...spec } = s.agent;
  return {
    id: s._id,
    type: 'session' as const,
    agent: {
      id: s.agent_id,
      type: 'agent' as const,
      version: s.agent_version,
      ...renderSpec(spec),
      // A coordinator's roster with each member's full definition (SDK BetaManagedAgentsSessionMultiagentCoordinator).
      ...(s.roster
        ? { multiagent: { type: 'coordinator' as const, agents: s.roster.map(renderThreadAgent) } }
        : {}),
    },
    agent_id: s.agent_id,
    agent_version: s.agent_version,
    environment_id: s.environment_id,
    title: s.title,
    metadata: s.metadata,
    resources: s.resources,
    vault_ids: s.vault_ids,
    ...(s.deployment_id ? { deployment_id: s.deployment_id } : {}),
    budget: s.budget,
    status: deriveStatus(s, hasRun),
    stats: renderStats(s),
    usage: renderUsage(s),
    outcome_evaluations: renderOutcomes(s.outcomes),
    archived_at: s.archived_at,
    terminated_at: s.terminated_at,
    created_at: s.created_at,
    updated_at: s.updated_at,
  };
}
