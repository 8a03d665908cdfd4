/**
 * `npm run bench`: platform figures on this machine, section by section. Figures only: no
 * assertions, no thresholds. Everything runs in this process on 127.0.0.1 (the HTTP load loop
 * on a worker thread). BENCH_SECONDS (default 8) sets each timed measurement; the default run
 * takes about 90 s. See load/README.md.
 *
 * Adding a section: a module under load/bench/ exporting `async (platform, settings) => figures`
 * that prints its own table, listed in SECTIONS below.
 */
import os from 'node:os';
import { startBenchPlatform, type BenchPlatform } from './context.js';
import { eventsSection } from './events.js';
import { httpSection } from './http.js';
import { loadSettings, type BenchSettings } from './settings.js';
import { storeSection } from './store.js';
import { fmt } from './stats.js';
import { turnsSection, type TurnFigures } from './turns.js';

interface Section {
  name: string;
  /** Whether the section needs the in-process platform. */
  platform: boolean;
  run(p: BenchPlatform | null, s: BenchSettings, results: Map<string, unknown>): Promise<unknown>;
}

const SECTIONS: Section[] = [
  { name: 'http', platform: true, run: (p, s) => httpSection(p!, s) },
  { name: 'turns', platform: true, run: (p, s) => turnsSection(p!, s) },
  { name: 'events', platform: true, run: (p, s, r) => eventsSection(p!, s, r.get('turns') as TurnFigures | undefined) },
  { name: 'store', platform: false, run: (_p, s) => storeSection(s) },
];

async function main(): Promise<void> {
  const s = loadSettings();
  const cpus = os.cpus();
  const started = performance.now();
  // Hard bound on the whole run: an unref'd timer only fires if something is still running.
  const watchdog = setTimeout(() => {
    console.error(`bench: still running after ${Math.round((performance.now() - started) / 1000)} s; exiting`);
    process.exit(2);
  }, (15 * s.seconds + 90) * 1000);
  watchdog.unref();

  console.log('agentfleet bench: figures only (no thresholds); they vary with the machine and its load');
  console.log(`machine:  ${cpus.length} cpus (${cpus[0]?.model.trim() ?? 'unknown'}), ${fmt(os.totalmem() / 2 ** 30, 1)} GiB, ${os.platform()} ${os.release()} ${os.arch()}`);
  console.log(`node:     ${process.version}`);
  console.log(`settings: BENCH_SECONDS=${s.seconds} (per measurement), warm-up ${s.warmupMs / 1000}s, connections=${s.connections}, turns<=${s.turns}, sessions=${s.sessions}`);
  console.log('setup:    platform in-process (embedded adapters, temp data dir), scripted model with zero latency, all on 127.0.0.1');

  const results = new Map<string, unknown>();
  let failed = 0;
  let platform: BenchPlatform | null = null;
  try {
    for (const section of SECTIONS) {
      try {
        if (section.platform && !platform) platform = await startBenchPlatform();
        if (!section.platform && platform) {
          await platform.close();
          platform = null;
        }
        results.set(section.name, await section.run(platform, s, results));
      } catch (err) {
        failed++;
        console.error(`\nsection '${section.name}' failed: ${(err as Error).stack ?? err}`);
      }
    }
  } finally {
    await platform?.close();
  }
  console.log(`\nbench done in ${fmt((performance.now() - started) / 1000, 1)} s${failed ? `; ${failed} section(s) failed` : ''}`);
  if (failed) process.exitCode = 1;
  // Everything is closed; if a stray handle keeps the loop alive, do not hang.
  setTimeout(() => process.exit(), 3000).unref();
}

await main();
