/**
 * Section h: sandboxes (local bubblewrap driver): cold start (driver start → first ping) and warm
 * exec round-trip (`exec true` through the agent), beside a bare `bwrap … true` in the same run.
 * The bench lives in core/bench/sandbox.bench.ts (outside this project: loaded at run time).
 */
import { printSection } from './stats.js';

export async function sandboxSection(): Promise<void> {
  printSection(
    'h. Sandboxes: cold start and warm exec (local bubblewrap driver) beside bare bwrap',
  );
  const url = new URL('../../core/bench/sandbox.bench.ts', import.meta.url);
  const mod = (await import(url.href)) as {
    sandboxBench?: (o?: { starts?: number; execs?: number }) => Promise<unknown>;
  };
  if (typeof mod.sandboxBench !== 'function') {
    console.log('skipped: core/bench/sandbox.bench.ts exports no sandboxBench');
    return;
  }
  try {
    await mod.sandboxBench({ starts: 20, execs: 200 });
  } catch (err) {
    console.log(`skipped: ${(err as Error).message}`);
  }
}
