/**
 * `npm run bench`: platform figures on this machine, section by section. Figures only: no
 * assertions, no thresholds. Sections a–d run the platform in this process on 127.0.0.1 (the HTTP
 * load loop on a worker thread, the scripted model in a process of its own) on the embedded
 * adapters. Sections e–g need the real servers (REDIS_URL, KAFKA_BROKERS and MONGODB_URL on
 * 127.0.0.1, e.g. from `npm run infra:up`'s fleet.env) and print one "skipped: …" line without
 * them: e and f run the platform in-process on Kafka + FerretDB + Redis, g runs a gateway and
 * worker processes. BENCH_SECONDS (default 8) sets each timed measurement; the default run
 * takes about 2 minutes, about 3 with the real servers. Section h (console) drives the built
 * console in Debian's chromium. See load/README.md.
 *
 * Adding a section: a module under load/bench/ exporting `async (platform, settings) => figures`
 * that prints its own table, listed in SECTIONS below.
 */
import os from 'node:os';
import { startBenchPlatform, type BenchPlatform } from './context.js';
import { floorsSection } from './baselines.js';
import { printGoals } from './goals.js';
import { egressSection } from './egress.js';
import { webhookIngestSection } from './webhookIngest.js';
import { repoCloneSection } from './repoClone.js';
import { memorySearchSection } from './memorySearch.js';
import { memorySection } from './memory.js';
import { eventsSection } from './events.js';
import { fanoutSection } from './fanout.js';
import { httpSection } from './http.js';
import {
  describeServers,
  dropNamespace,
  newNamespace,
  realAdapterEnv,
  realConfig,
  type RealServers,
} from './real.js';
import { loadSettings, type BenchSettings } from './settings.js';
import { storeSection } from './store.js';
import { storeScaleSection } from './storeScale.js';
import { sandboxSection } from './sandbox.js';
import { fmt, printSection } from './stats.js';
import { turnsSection, type TurnFigures } from './turns.js';
import { workersSection } from './workers.js';
import { storeShareSection } from './realShare.js';
import { costReportSection } from './costReport.js';
import { evalsSection } from './evals.js';
import { consoleSection } from './console.js';
import { threadsSection } from './threads.js';

/** Which in-process platform a section needs: embedded adapters, the real servers, or none. */
type PlatformKind = 'embedded' | 'real' | null;

interface Section {
  name: string;
  platform: PlatformKind;
  /** Needs the real servers (skipped with one line when they are not configured). */
  real: boolean;
  run(
    p: BenchPlatform | null,
    s: BenchSettings,
    results: Map<string, unknown>,
    servers: RealServers | null,
  ): Promise<unknown>;
}

const SECTIONS: Section[] = [
  { name: 'http', platform: 'embedded', real: false, run: (p, s) => httpSection(p!, s) },
  { name: 'turns', platform: 'embedded', real: false, run: (p, s) => turnsSection(p!, s) },
  {
    name: 'events',
    platform: 'embedded',
    real: false,
    run: (p, s, r) => eventsSection(p!, s, r.get('turns') as TurnFigures | undefined),
  },
  { name: 'console', platform: 'embedded', real: false, run: (p, s) => consoleSection(p!, s) },
  // Its own platform on a scriptable model process (the coordinator's start_thread calls).
  { name: 'threads', platform: null, real: false, run: (_p, s) => threadsSection(s) },
  { name: 'fanout', platform: null, real: false, run: (_p, s) => fanoutSection(s) },
  { name: 'store', platform: null, real: false, run: (_p, s) => storeSection(s) },
  { name: 'store-scale', platform: null, real: false, run: (_p, s) => storeScaleSection(s) },
  { name: 'sandbox', platform: null, real: false, run: () => sandboxSection() },
  { name: 'egress', platform: null, real: false, run: () => egressSection() },
  { name: 'webhook-ingest', platform: null, real: false, run: () => webhookIngestSection() },
  { name: 'repo-clone', platform: null, real: false, run: () => repoCloneSection() },
  { name: 'cost-report', platform: null, real: false, run: () => costReportSection() },
  { name: 'evals', platform: null, real: false, run: () => evalsSection() },
  { name: 'memory-search', platform: null, real: false, run: () => memorySearchSection() },
  { name: 'floors', platform: null, real: false, run: (_p, s) => floorsSection(s) },
  { name: 'memory', platform: null, real: false, run: (_p, s) => memorySection(s) },
  {
    name: 'real-turns',
    platform: 'real',
    real: true,
    run: (p, s) =>
      turnsSection(
        p!,
        s,
        'e. Turn overhead on Kafka + FerretDB + Redis (platform in-process on the real adapters, zero-latency model, SSE ?include=chunks open)',
        false,
      ),
  },
  {
    name: 'real-events',
    platform: 'real',
    real: true,
    run: (p, s, r) =>
      eventsSection(p!, s, r.get('real-turns') as TurnFigures | undefined, {
        title:
          'f. Event log appends/s on FerretDB (MongoDB store adapter, EventLog.append in-process)',
        turnsSection: 'section e',
      }),
  },
  {
    name: 'real-store-share',
    platform: null,
    real: true,
    run: (_p, s, _r, servers) => storeShareSection(servers!, s),
  },
  {
    name: 'workers',
    platform: null,
    real: true,
    run: (_p, s, _r, servers) => workersSection(servers!, s),
  },
];

/** The in-process platform of a kind; the real one runs on its own namespace, removed on close. */
async function startPlatform(
  kind: 'embedded' | 'real',
  servers: RealServers | null,
): Promise<BenchPlatform> {
  if (kind === 'embedded') return startBenchPlatform();
  const namespace = newNamespace('p');
  const p = await startBenchPlatform(realAdapterEnv(servers!, namespace));
  return {
    ...p,
    async close() {
      try {
        await p.close();
      } finally {
        console.log(`  cleanup: ${await dropNamespace(servers!, namespace)}`);
      }
    },
  };
}

async function main(): Promise<void> {
  const s = loadSettings();
  const real = realConfig();
  const cpus = os.cpus();
  const started = performance.now();
  // Hard bound on the whole run: an unref'd timer only fires if something is still running.
  // Child processes of section g are SIGKILLed on exit (procs.ts).
  // Sections a-d and the floors: ~15 × BENCH_SECONDS; fan-out and memory start their own
  // processes (~4 × BENCH_SECONDS + 150 s); store-scale fills BENCH_STORE_EVENTS at >= 5k/s.
  const boundS =
    19 * s.seconds +
    240 +
    Math.ceil(s.storeEvents / 5000) +
    // The console section: its sessions at >= 50/s, chromium, 40 live events.
    60 +
    Math.ceil(s.consoleSessions / 50) +
    // The threads section: 2 × BENCH_SECONDS of rounds, its own platform and model process.
    2 * s.seconds +
    60 +
    // Webhook ingest (66 sequential turns) and repo-clone (8 host clones, 8 sandbox warmups that clone).
    120 +
    (real.servers ? 12 * s.seconds + 180 : 0);
  const watchdog = setTimeout(() => {
    console.error(
      `bench: still running after ${Math.round((performance.now() - started) / 1000)} s; exiting`,
    );
    process.exit(2);
  }, boundS * 1000);
  watchdog.unref();

  console.log(
    'agentfleet bench: figures only (no thresholds); they vary with the machine and its load',
  );
  console.log(
    `machine:  ${cpus.length} cpus (${cpus[0]?.model.trim() ?? 'unknown'}), ${fmt(os.totalmem() / 2 ** 30, 1)} GiB, ${os.platform()} ${os.release()} ${os.arch()}`,
  );
  console.log(`node:     ${process.version}`);
  console.log(
    `settings: BENCH_SECONDS=${s.seconds} (per measurement), warm-up ${s.warmupMs / 1000}s, connections=${s.connections}, turns<=${s.turns}, sessions=${s.sessions}, model delay (section g) ${s.modelDelayMs} ms`,
  );
  console.log(
    'setup:    a-d: platform in-process (embedded adapters, temp data dir), scripted model with zero latency in its own process, all on 127.0.0.1',
  );
  console.log(
    `real:     ${real.servers ? `e-g on ${describeServers(real.servers)} (FerretDB v1 behind a write-serializing proxy; a fresh namespace per platform, removed afterwards)` : 'e-g skipped (REDIS_URL, KAFKA_BROKERS, MONGODB_URL not all set)'}`,
  );

  const results = new Map<string, unknown>();
  let failed = 0;
  let platform: BenchPlatform | null = null;
  let platformKind: PlatformKind = null;
  let skipPrinted = false;
  try {
    // BENCH_ONLY=turns,events runs only the named sections (names as in SECTIONS).
    const only = process.env.BENCH_ONLY?.split(',').map((n) => n.trim());
    const unknown = only?.filter((n) => !SECTIONS.some((x) => x.name === n)) ?? [];
    if (unknown.length)
      throw new Error(
        `BENCH_ONLY: unknown section(s) ${unknown.join(', ')}; known: ${SECTIONS.map((x) => x.name).join(', ')}`,
      );
    for (const section of SECTIONS) {
      if (only && !only.includes(section.name)) continue;
      if (section.real && !real.servers) {
        if (!skipPrinted) {
          printSection(
            'e-g. Real servers: turn overhead, event appends and 1 vs 2 workers on Kafka + FerretDB + Redis',
          );
          console.log(real.reason);
          skipPrinted = true;
        }
        continue;
      }
      try {
        if (platform && platformKind !== section.platform) {
          const p = platform;
          platform = null;
          platformKind = null;
          await p.close();
        }
        if (section.platform && !platform) {
          platform = await startPlatform(section.platform, real.servers);
          platformKind = section.platform;
        }
        results.set(section.name, await section.run(platform, s, results, real.servers));
      } catch (err) {
        failed++;
        console.error(`\nsection '${section.name}' failed: ${(err as Error).stack ?? err}`);
      }
    }
  } finally {
    await platform?.close();
  }
  printGoals(results);
  console.log(
    `\nbench done in ${fmt((performance.now() - started) / 1000, 1)} s${failed ? `; ${failed} section(s) failed` : ''}`,
  );
  if (failed) process.exitCode = 1;
  // Everything is closed; if a stray handle keeps the loop alive, do not hang.
  setTimeout(() => process.exit(), 3000).unref();
}

await main();
