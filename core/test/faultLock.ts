/**
 * The fault set of real servers (FAULT_*, *_RESTART_CMD: test/kit/infra/up.sh) is restarted by test
 * files that vitest runs in parallel (core/test/bus.test.ts: Kafka; core/test/coordination.test.ts:
 * Redis; test/e2e/fleet/fleet.test.ts: both). A test that restarts a fault server holds this lock for its
 * whole run, so one file's restart never lands in the middle of another's restart test (a broker
 * bounced by the fleet test made the bus restart test fail to connect, CI at b2c950a).
 * The lock is flock(1) on a file in the temp dir, held by a child process: the kernel drops it
 * when that process ends, so a crashed test never leaves it taken.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const FAULT_LOCK_FILE = join(tmpdir(), 'agentfleet-fault-servers.lock');

/** Runs `fn` while holding the fault-server lock (waits for another holder to finish). */
export async function withFaultLock<T>(fn: () => Promise<T>): Promise<T> {
  const holder = spawn('flock', [FAULT_LOCK_FILE, '-c', 'echo locked; exec cat'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  try {
    await new Promise<void>((resolve, reject) => {
      holder.once('error', reject);
      holder.once('exit', (code) => reject(new Error(`flock exited with ${code}`)));
      holder.stdout!.once('data', () => resolve());
    });
    return await fn();
  } finally {
    holder.stdin!.end();
    if (holder.exitCode === null && holder.signalCode === null) await once(holder, 'exit');
  }
}
