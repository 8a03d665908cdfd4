/**
 * A CPU profile of this process for the standalone bench scripts (turnCalls.ts, sessionAge.ts):
 * started now, written to `file` (Chrome DevTools format) by the returned stop; nothing at all
 * when `file` is unset (the scripts pass `process.env.PROF`).
 */
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';

export async function cpuProfile(file: string | undefined): Promise<() => Promise<void>> {
  if (!file) return async () => {};
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  return async () => {
    writeFileSync(file, JSON.stringify((await session.post('Profiler.stop')).profile));
    session.disconnect();
  };
}
