/**
 * The Nomad launcher program (bundled as dist/launcher.mjs): the entry point of launcher.ts,
 * which documents its arguments and guarantees. Proved by core/test/sandbox.nomad.test.ts.
 */
import { runLauncher } from './launcher.js';

runLauncher(process.argv.slice(2)).catch((err) => {
  process.stderr.write(`nomad-agent: ${(err as Error).message}\n`);
  process.exit(2);
});
