/**
 * The outcome grader's evidence from the sandbox: the files the agent left in the session's
 * outputs directory (/mnt/session/outputs), read as text when its sandbox is up (a cold sandbox
 * is not started for it: the grader then judges the messages and tool results alone). At most
 * MAX_FILES files; each read to MAX_LINES lines; a file that is not text is named with the
 * reason. A sandbox error leaves the evidence without files, never fails the evaluation.
 * Proved by test/e2e/turns/outcomes-outputs.test.ts.
 */
import { sessionOf } from '@agentfleet/core';
import type { Evidence, SandboxManager, SessionDoc } from '@agentfleet/core';

const OUTPUTS = '/mnt/session/outputs';
const MAX_FILES = 20;
const MAX_LINES = 2_000;

export async function outputEvidence(
  sandbox: SandboxManager | null,
  tenant: string,
  s: Pick<SessionDoc, '_id' | 'environment_id'>,
): Promise<Evidence[]> {
  if (!sandbox || sandbox.state(sessionOf(s)) !== 'active') return [];
  const ref = { tenantId: tenant, sessionId: sessionOf(s), environmentId: s.environment_id };
  try {
    return await sandbox.run(ref, async (api) => {
      const out: Evidence[] = [];
      for (const path of await api.glob('**/*', OUTPUTS)) {
        if (out.length >= MAX_FILES) break;
        try {
          const { content } = await api.readFile(path, { limit: MAX_LINES });
          out.push({ kind: 'output_file', path, text: content });
        } catch (err) {
          const why = err instanceof Error ? err.message : String(err);
          if (/directory/i.test(why)) continue;
          out.push({ kind: 'output_file', path, text: `(not read: ${why})` });
        }
      }
      return out;
    });
  } catch {
    return [];
  }
}
