/**
 * Mounted memory stores are written back before the turn reports idle (beside the outputs
 * sync, ./outputs.ts): what the turn changed under each store's mount path becomes memory
 * writes with versions, and conflicts or unwritable files become session.warning events
 * appended before the idle (core/src/memory/session/writeBack.ts). A session whose sandbox is
 * not active (none started, or a self_hosted session) writes nothing back; a write-back that
 * fails unexpectedly is logged and never keeps the turn from going idle (the changes stay in
 * the sandbox and are retried at the next idle). The mounted stores are also described in the
 * system prompt (withMemoryPrompt). Proven by test/e2e/memory/memory-session.test.ts.
 */
import { sessionOf } from '@agentfleet/core';
import {
  isMemoryResource,
  memoryWriteBack,
  systemWithMemory,
  type EventDraft,
  type Logger,
  type SandboxManager,
  type SessionDoc,
} from '@agentfleet/core';
import type { WorkerServices } from '../services.js';

/**
 * The session with the memory section appended to its agent's system prompt (core/src/memory/
 * session/prompt.ts); unchanged without memory stores or without a sandbox (self_hosted: the
 * customer's worker reaches the stores through the API, nothing is mounted).
 */
export function withMemoryPrompt(s: SessionDoc, hasSandbox: boolean): SessionDoc {
  const stores = (s.resources ?? []).filter(isMemoryResource);
  if (!stores.length || !hasSandbox) return s;
  return { ...s, agent: { ...s.agent, system: systemWithMemory(s.agent.system, stores) } };
}

export async function memoryWarnings(
  p: Pick<WorkerServices, 'memory'>,
  sandbox: SandboxManager | null,
  s: SessionDoc | null,
  log: Logger,
): Promise<EventDraft[]> {
  const stores = (s?.resources ?? []).filter(isMemoryResource);
  if (!sandbox || !s || !stores.length || sandbox.state(sessionOf(s)) !== 'active') return [];
  const ref = { tenantId: s.tenant_id, sessionId: sessionOf(s), environmentId: s.environment_id };
  try {
    return await sandbox.run(ref, (api) =>
      memoryWriteBack(p.memory, api, s.tenant_id, sessionOf(s), stores),
    );
  } catch (err) {
    log.warn('memory write-back failed', { session_id: s._id, err: String(err) });
    return [];
  }
}
