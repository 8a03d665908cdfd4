/**
 * Local sandbox figures (no assertions): cold start (driver start → first ping answered, i.e.
 * bwrap + node + the agent), a warm `exec true` round trip and a warm ping round trip, beside a
 * bare `bwrap … true` with the same namespaces and binds in the same run (the floor: what
 * bubblewrap itself costs). Needs bwrap.
 * Run: npx tsx core/bench/sandbox.bench.ts [starts=20] [execs=200]
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createLocalDriver } from '../src/adapters/bubblewrap/driver.js';
import {
  NAMESPACE_ARGS,
  checkBubblewrap,
  systemBindArgs,
  writeSystemFiles,
} from '../src/adapters/bubblewrap/layout.js';
import { latencyRow, type LatencyRow } from './latencyRow.js';

export type SandboxBenchRow = LatencyRow;
const row = latencyRow;

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

export async function sandboxBench(
  opts: { starts?: number; execs?: number } = {},
): Promise<SandboxBenchRow[]> {
  const starts = opts.starts ?? 20;
  const execs = opts.execs ?? 200;
  const check = checkBubblewrap();
  if (!check.ok) {
    console.log(`skipped: ${check.message}`);
    return [];
  }
  const dir = await mkdtemp(join(tmpdir(), 'sandbox-bench-'));
  const driver = createLocalDriver({ rootDir: join(dir, 'sandboxes') });
  try {
    const spec = (i: number) => ({
      tenantId: 'tnt_bench',
      environmentId: 'env_bench',
      sessionId: `bench_${i}`,
      size: 'small' as const,
      env: {},
      proxyUrl: null,
    });
    // warm the agent script cache and the page cache once, untimed
    const first = await driver.start(spec(-1));
    await first.api.ping();
    await first.destroy();

    const systemDir = join(dir, 'system');
    await writeSystemFiles(systemDir);
    const bareArgs = [
      ...NAMESPACE_ARGS,
      ...systemBindArgs(systemDir),
      '--clearenv',
      '--',
      '/bin/true',
    ];
    const bare: number[] = [];
    for (let i = 0; i < starts; i++) {
      bare.push(
        await timed(
          () =>
            new Promise<void>((resolve, reject) => {
              const p = spawn('bwrap', bareArgs, { stdio: 'ignore' });
              p.once('error', reject);
              p.once('exit', (code) =>
                code === 0 ? resolve() : reject(new Error(`bwrap exited ${code}`)),
              );
            }),
        ),
      );
    }

    const cold: number[] = [];
    for (let i = 0; i < starts; i++) {
      let h: Awaited<ReturnType<typeof driver.start>> | undefined;
      cold.push(
        await timed(async () => {
          h = await driver.start(spec(i));
          await h.api.ping();
        }),
      );
      await h!.destroy();
    }

    const h = await driver.start(spec(starts));
    for (let i = 0; i < 10; i++) await h.api.exec({ command: 'true' });
    const exec: number[] = [];
    for (let i = 0; i < execs; i++) exec.push(await timed(() => h.api.exec({ command: 'true' })));
    const ping: number[] = [];
    for (let i = 0; i < execs; i++) ping.push(await timed(() => h.api.ping()));
    await h.destroy();

    const rows = [
      row('bare bwrap … /bin/true (same namespaces and binds)', bare),
      row('cold start: driver start → first ping', cold),
      row('warm exec true round trip', exec),
      row('warm ping round trip', ping),
    ];
    console.log(`local sandbox (${check.version})`);
    console.table(rows);
    return rows;
  } finally {
    await driver.close();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await sandboxBench({
    starts: Number(process.argv[2] ?? 20),
    execs: Number(process.argv[3] ?? 200),
  });
}
