/**
 * Section d: the embedded store micro-bench from core/bench/store.bench.ts, when that module
 * exports a function (it is outside this project, so it is loaded at run time). A module that
 * is only a standalone script is not imported (importing would run it with its own defaults).
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { BenchSettings } from './settings.js';
import { printSection, printTable, type Cell } from './stats.js';

const EXPORTS_FUNCTION =
  /^export\s+(?:default\s+)?(?:async\s+)?function\b|^export\s+(?:const|let)\s+\w+\s*=\s*(?:async\s*)?(?:\(|function\b|\w+\s*=>)|^export\s+default\s+(?:async\s*)?\(/m;

function printValue(v: unknown): void {
  if (
    Array.isArray(v) &&
    v.length &&
    v.every((r) => r && typeof r === 'object' && !Array.isArray(r))
  ) {
    const headers = [...new Set(v.flatMap((r) => Object.keys(r as object)))];
    printTable(
      'store micro-bench',
      headers,
      v.map((r) => headers.map((h) => cell((r as Record<string, unknown>)[h]))),
    );
  } else if (v && typeof v === 'object') {
    printTable(
      'store micro-bench',
      ['figure', 'value'],
      Object.entries(v).map(([k, x]) => [k, cell(x)]),
    );
  }
}

const cell = (x: unknown): Cell =>
  typeof x === 'number' ? x : x === undefined ? '' : typeof x === 'string' ? x : JSON.stringify(x);

export async function storeSection(s: BenchSettings): Promise<void> {
  printSection('d. Embedded store micro-bench (core/bench/store.bench.ts)');
  const url = new URL('../../core/bench/store.bench.ts', import.meta.url);
  const file = fileURLToPath(url);
  if (!existsSync(file)) {
    console.log('skipped: core/bench/store.bench.ts is not present');
    return;
  }
  if (!EXPORTS_FUNCTION.test(readFileSync(file, 'utf8'))) {
    console.log(
      'skipped: core/bench/store.bench.ts exports no function (standalone script: npx tsx core/bench/store.bench.ts)',
    );
    return;
  }
  const mod = (await import(url.href)) as Record<string, unknown>;
  const preferred = ['default', 'run', 'runStoreBench', 'storeBench', 'bench', 'main'];
  const name = [
    ...preferred.filter((k) => typeof mod[k] === 'function'),
    ...Object.keys(mod).filter((k) => typeof mod[k] === 'function'),
  ][0];
  if (!name) {
    console.log('skipped: core/bench/store.bench.ts exports no function');
    return;
  }
  console.log(`running export '${name}'`);
  const result = await (mod[name] as (opts: { seconds: number; durationMs: number }) => unknown)({
    seconds: s.seconds,
    durationMs: s.seconds * 1000,
  });
  printValue(result);
}
