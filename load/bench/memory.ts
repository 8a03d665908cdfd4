/**
 * Section i: memory per idle session and per idle local sandbox. The platform runs in a child
 * process (memoryChild.ts, `node --expose-gc`, embedded adapters, temp data dir) so nothing of
 * the bench's own process counts. Figures are RSS and JS heap after a full GC: the platform with
 * no session (startup, and after a warm-up of 20 sessions: the baseline), with N idle sessions
 * (created, one finished turn, no open stream), then with M idle sandboxes (local bubblewrap
 * driver; a session whose turn ran `bash true`): per sandbox, the platform-side RSS delta plus
 * the sandbox-side delta (VmRSS summed over the platform's descendant processes; Pss printed
 * beside it, which splits pages the sandboxes share). Without bwrap the sandbox rows print
 * "skipped".
 */
import { spawnSync } from 'node:child_process';
import type { MemoryChildResult, MemorySample } from './memoryChild.js';
import { runResultChild } from './procs.js';
import type { BenchSettings } from './settings.js';
import { fmt, fmtInt, printSection, printTable } from './stats.js';

export interface MemoryFigures {
  rssPerIdleSessionKb: number;
  heapPerIdleSessionKb: number;
  /** Platform-side + sandbox-side RSS per idle sandbox; null when skipped. */
  rssPerIdleSandboxKb: number | null;
  platformRssPerIdleSandboxKb: number | null;
  sandboxRssPerIdleSandboxKb: number | null;
  sandboxPssPerIdleSandboxKb: number | null;
  /** The baseline: platform RSS with zero sessions (after the warm-up), and at startup, MB. */
  baselineRssMb: number;
  startupRssMb: number;
  sessions: number;
  sandboxes: number | null;
}

/** Idle sessions: 60 per BENCH_SECONDS, 100..500 (the run's length scales with it). */
const sessionsFor = (s: BenchSettings) => Math.round(Math.min(500, Math.max(100, 60 * s.seconds)));
/** Idle sandboxes: 10, or 4 on short runs (BENCH_SECONDS < 4). */
const sandboxesFor = (s: BenchSettings) => (s.seconds < 4 ? 4 : 10);
const CHILD_BOUND_MS = 300_000;

function bwrapProblem(): string | null {
  const v = spawnSync('bwrap', ['--version'], { encoding: 'utf8', timeout: 5000 });
  return v.status === 0 ? null : `bwrap not available (${v.error?.message ?? v.stderr.trim()})`;
}

function runChild(n: number, m: number, noSandbox: string | null): Promise<MemoryChildResult> {
  return runResultChild<MemoryChildResult>(
    new URL('./memoryChild.ts', import.meta.url),
    [String(n), String(m), noSandbox ?? ''],
    'memory bench child',
    { boundMs: CHILD_BOUND_MS, execArgv: ['--expose-gc'] },
  );
}

export async function memorySection(s: BenchSettings): Promise<MemoryFigures> {
  printSection(
    'i. Memory: RSS per idle session and per idle local sandbox (platform in a child process)',
  );
  const r = await runChild(sessionsFor(s), sandboxesFor(s), bwrapProblem());
  const n = r.sessions.n;
  const perSession = (k: keyof MemorySample) => (r.sessions.after[k] - r.base[k]) / n;
  const sb = r.sandboxes;
  const perSandbox = (k: keyof MemorySample) => (sb ? (sb.after[k] - sb.before[k]) / sb.m : null);
  const platformSide = perSandbox('rssKb');
  const sandboxSide = perSandbox('childRssKb');
  const figures: MemoryFigures = {
    rssPerIdleSessionKb: perSession('rssKb'),
    heapPerIdleSessionKb: perSession('heapUsedKb'),
    rssPerIdleSandboxKb:
      platformSide === null || sandboxSide === null ? null : platformSide + sandboxSide,
    platformRssPerIdleSandboxKb: platformSide,
    sandboxRssPerIdleSandboxKb: sandboxSide,
    sandboxPssPerIdleSandboxKb: perSandbox('childPssKb'),
    baselineRssMb: r.base.rssKb / 1024,
    startupRssMb: r.startup.rssKb / 1024,
    sessions: n,
    sandboxes: sb ? sb.m : null,
  };
  const row = (name: string, s: MemorySample) => [
    name,
    fmtInt(s.rssKb),
    fmtInt(s.heapUsedKb),
    fmtInt(s.children),
    fmtInt(s.childRssKb),
    fmtInt(s.childPssKb),
  ];
  const kb = (v: number | null) => (v === null ? 'skipped' : `${fmt(v, 1)} KiB`);
  printTable(
    'after a full GC; platform = the child process, sandboxes = its descendant processes',
    ['state', 'platform RSS KiB', 'JS heap KiB', 'procs', 'procs RSS KiB', 'procs Pss KiB'],
    [
      row('startup, no session', r.startup),
      row('baseline: no session, after a warm-up of 20', r.base),
      row(`${n} more idle sessions (${fmt(r.sessions.ms / 1000, 1)} s)`, r.sessions.after),
      ...(sb
        ? [
            row('before sandboxes (1 warm-up sandbox)', sb.before),
            row(`${sb.m} more idle sandboxes (${fmt(sb.ms / 1000, 1)} s)`, sb.after),
          ]
        : []),
    ],
    [
      `per idle session: RSS ${kb(figures.rssPerIdleSessionKb)}, JS heap ${kb(figures.heapPerIdleSessionKb)} (baseline: platform RSS ${fmtInt(r.base.rssKb)} KiB with no session)`,
      sb
        ? `per idle sandbox: ${kb(figures.rssPerIdleSandboxKb)} RSS = platform ${kb(platformSide)} + sandbox processes ${kb(sandboxSide)} (sandbox Pss ${kb(figures.sandboxPssPerIdleSandboxKb)})`
        : `per idle sandbox: skipped: ${r.sandboxSkipped}`,
    ],
  );
  return figures;
}
