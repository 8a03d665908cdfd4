/**
 * Runs turnClient.ts in a child process against a gateway (the platform or the turn floor) and
 * summarizes its timings. The child is killed when the run ends or after a bound, also on error.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { TurnJob, TurnJobResult } from './turnClient.js';
import { BENCH_CHILD_EXEC_ARGV } from './procs.js';
import { summarize, type Summary } from './stats.js';

const CLIENT = fileURLToPath(new URL('./turnClient.ts', import.meta.url));
const REPO = fileURLToPath(new URL('../..', import.meta.url));

export interface ClientProcessTurns {
  firstChunk: Summary;
  idle: Summary;
  turnsPerSec: number;
  concurrentIdle: Summary;
  errors: number;
}

export async function turnsFromClientProcess(job: TurnJob): Promise<ClientProcessTurns> {
  const child = fork(CLIENT, [], {
    cwd: REPO,
    execArgv: BENCH_CHILD_EXEC_ARGV,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const bound = (2 * job.seconds + 60) * 1000;
  try {
    const r = await new Promise<TurnJobResult>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('turn client: no answer')), bound);
      child.once('message', (m: { result?: TurnJobResult; error?: string }) => {
        clearTimeout(timer);
        if (m.result) resolve(m.result);
        else reject(new Error(`turn client: ${m.error}`));
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`turn client exited (${code})`));
      });
      child.send(job);
    });
    return {
      firstChunk: summarize(r.first),
      idle: summarize(r.idle),
      turnsPerSec: r.concurrentIdle.length / r.concurrentSeconds,
      concurrentIdle: summarize(r.concurrentIdle),
      errors: r.errors,
    };
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}
