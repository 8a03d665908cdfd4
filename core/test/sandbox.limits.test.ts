/**
 * Local sandboxes keep host secrets out and their resource use in: real bwrap sandboxes with
 * real cgroups and a real loop-mounted disk, small limits so that each attack is quick.
 * Every attack is bounded (the fork bomb under `timeout`, the hog and the filler by the limits
 * themselves). Needs bwrap, root, cgroups (v1 or v2) and loop devices, as CI has.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createLocalDriver,
  type LocalDriver,
  type LocalSandboxHandle,
} from '../src/sandbox/drivers/bubblewrap/driver.js';
import { isMountPoint } from '@agentfleet/sandbox-agent';
import {
  probeSandboxLimits,
  sandboxResources,
  type SandboxLimitsProbe,
} from '../src/sandbox/drivers/bubblewrap/limits.js';
import { archiveBytes, testSpec } from './sandbox.contract.js';

const SECRETS = {
  API_KEY: 'op-key-limits-test-7d1f0b',
  PLATFORM_ROOT_SECRET: 'root-secret-limits-test-98c2a4e5',
  ANTHROPIC_API_KEY: 'sk-ant-limits-test-41aa',
};
const CAPS = { processes: 64, memoryMb: 128, diskMb: 64, cpus: 0.5 };

let base: string;
let probe: SandboxLimitsProbe;
let driver: LocalDriver;
const saved: Record<string, string | undefined> = {};

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'sbx-limits-'));
  probe = await probeSandboxLimits(base);
  // the server's own environment holds secrets: none may reach a sandbox
  for (const [k, v] of Object.entries(SECRETS)) {
    saved[k] = process.env[k];
    process.env[k] = v;
  }
  driver = createLocalDriver({ rootDir: join(base, 'root'), limits: { caps: CAPS, probe } });
}, 30_000);
afterAll(async () => {
  await driver?.close();
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await rm(base, { recursive: true, force: true });
});

describe('the host enforces every limit (the test machine must: CI does)', () => {
  it('processes, memory, cpu and disk are all enforceable here', () => {
    expect(probe.missing).toEqual([]);
    expect(probe.enforced.sort()).toEqual(['cpu', 'disk', 'memory', 'processes']);
  });

  it('limits come from the instance size, lowered by operator caps', () => {
    expect(sandboxResources('small')).toEqual({
      cpus: 1,
      memoryMb: 4096,
      diskMb: 4096,
      processes: 1024,
    });
    expect(sandboxResources('medium')).toEqual({
      cpus: 2,
      memoryMb: 8192,
      diskMb: 4096,
      processes: 2048,
    });
    expect(sandboxResources('large')).toEqual({
      cpus: 4,
      memoryMb: 16384,
      diskMb: 4096,
      processes: 4096,
    });
    expect(sandboxResources('large', { memoryMb: 512 })).toMatchObject({ cpus: 4, memoryMb: 512 });
  });
});

describe('local sandbox limits', () => {
  const handles: LocalSandboxHandle[] = [];
  afterEach(async () => {
    for (const h of handles.splice(0)) await h.destroy().catch(() => {});
  });
  const start = async () => {
    const h = await driver.start(testSpec());
    handles.push(h);
    return h;
  };

  it('no host secret in the sandbox: env, /proc/1/environ, every /proc/*/environ and /proc/*/cmdline', async () => {
    const h = await start();
    const r = await h.api.exec({
      command:
        "env; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do echo \"== $f\"; tr '\\0' '\\n' < $f; done; tr '\\0' '\\n' < /proc/1/environ",
    });
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toContain('== /proc/1/cmdline');
    expect(r.stdout).toContain('HOME=/home/user');
    for (const v of Object.values(SECRETS)) expect(r.stdout).not.toContain(v);
    expect(r.stdout).not.toContain(base); // no host path either
    // PID 1 (bwrap's copy) has an empty environment and only sandbox paths in its argv
    const pid1 = await h.api.exec({
      command: "wc -c < /proc/1/environ; tr '\\0' ' ' < /proc/1/cmdline",
    });
    expect(pid1.stdout.split('\n')[0].trim()).toBe('0');
    expect(pid1.stdout).toMatch(
      /bwrap --args 3 -- \/opt\/agentfleet\/bin\/node \/opt\/agentfleet\/agent\.mjs/,
    );
  });

  it('fork bomb: stays inside its process cap; the call returns an error, the sandbox goes on, another sandbox and its snapshot keep working', async () => {
    const victim = await start();
    const other = await start();
    await other.api.writeFile('/workspace/keep.txt', 'still here');
    const bomb = victim.api.exec({
      command: "timeout -s KILL 5 bash -c ':(){ :|:& };:'",
      timeoutMs: 30_000,
    });
    // meanwhile: the other sandbox runs commands and is snapshotted
    // the bomb runs into the cap (forks refused: a monotonic counter, no race with its end)
    await expect
      .poll(() => victim.confinement!.cgroup!.processLimitHits(), { timeout: 10_000, interval: 20 })
      .toBeGreaterThan(0);
    const during = await other.api.exec({ command: 'echo alive; ls /workspace' });
    expect(during.stdout).toBe('alive\nkeep.txt\n');
    const snapshot = await archiveBytes(other.api, '/workspace');
    expect(snapshot.length).toBeGreaterThan(0);
    const r = await bomb;
    expect(r.exitCode).not.toBe(0); // reported as failed: an is_error tool result
    expect(r.stderr).toMatch(/process limit \(64\) was reached/);
    expect(victim.confinement!.cgroup!.processUsage()!.max).toBe(CAPS.processes);
    // the watchdog frees the slots the bomb kept: the same sandbox runs commands again
    await expect
      .poll(async () => (await victim.api.exec({ command: 'echo ok' }).catch(() => null))?.stdout, {
        timeout: 15_000,
        interval: 500,
      })
      .toBe('ok\n');
  }, 60_000);

  it('processes left holding every slot: the watchdog kills the runaway processes, the agent survives, the sandbox goes on', async () => {
    const h = await start();
    // nothing would ever free these slots: long sleepers started until the cap, outliving the call
    // (starting a second later: the call has returned, so only the watchdog can see them)
    await h.api.exec({
      command: "nohup sh -c 'sleep 1; while :; do sleep 1000 & done' >/dev/null 2>&1 &",
    });
    await expect
      .poll(() => h.confinement!.cgroup!.processUsage()!.current, { timeout: 10_000, interval: 50 })
      .toBeGreaterThanOrEqual(CAPS.processes - 2);
    // the watchdog sees the sandbox stay at its cap, and kills everything but bwrap, init and the agent
    await expect
      .poll(() => h.confinement!.runawayKilled, { timeout: 10_000, interval: 100 })
      .toBeGreaterThan(0);
    // the slots are free for good: the sandbox is far below its cap
    await expect
      .poll(() => h.confinement!.cgroup!.processUsage()!.current, { timeout: 10_000 })
      .toBeLessThan(CAPS.processes / 2);
    expect((await h.api.exec({ command: 'echo again' })).stdout).toBe('again\n');
  }, 60_000);

  it('memory hog: OOM-killed inside its sandbox only; the sandbox goes on', async () => {
    const h = await start();
    const other = await start();
    // bash keeps a command substitution's output in memory: 400 MB against a 128 MB limit
    const r = await h.api.exec({
      command: 'bash -c \'x=$(head -c 400m /dev/zero | tr "\\0" a); echo ${#x}\'; echo "status=$?"',
      timeoutMs: 60_000,
    });
    expect(r.stdout).toMatch(/status=(137|1\d\d)/); // killed by SIGKILL
    expect(r.exitCode).not.toBe(0); // reported as failed: an is_error tool result
    expect(r.stderr).toMatch(/memory limit \(128 MB\) was reached/);
    expect(h.confinement!.cgroup!.oomKills()).toBeGreaterThan(0);
    expect((await h.api.exec({ command: 'echo next' })).stdout).toBe('next\n');
    expect((await other.api.exec({ command: 'echo other' })).stdout).toBe('other\n');
    expect(other.confinement!.cgroup!.oomKills()).toBe(0);
  }, 90_000);

  it('disk filler: workspace, tmp, home and outputs share one quota; ENOSPC inside, the host and other sandboxes unaffected', async () => {
    const h = await start();
    const other = await start();
    // the disk was detached from the host once the sandbox ran: nothing to leak if the server dies
    expect(isMountPoint(h.hostDir)).toBe(false);
    expect(existsSync(`${h.hostDir}.img`)).toBe(false);
    const df = await h.api.exec({ command: 'df -k /workspace | tail -1' });
    const sizeKb = Number(df.stdout.trim().split(/\s+/)[1]);
    expect(sizeKb).toBeGreaterThan(40 * 1024);
    expect(sizeKb).toBeLessThanOrEqual(CAPS.diskMb * 1024);
    // 40 MB in /tmp, then 40 MB more in /workspace: the second write fails with ENOSPC
    const tmp = await h.api.exec({ command: 'head -c 40m /dev/zero > /tmp/fill && echo tmp-ok' });
    expect(tmp.stdout).toBe('tmp-ok\n');
    const ws = await h.api.exec({
      command: 'head -c 40m /dev/zero > /workspace/fill; echo "status=$?"',
    });
    expect(ws.stdout).toBe('status=1\n');
    expect(ws.stderr).toMatch(/No space left on device/);
    // Outputs share the quota. A few blocks may come free once the failed write's delayed
    // allocations settle (which ones depends on the directory layout), so write more than that.
    const out = await h.api.exec({ command: 'head -c 1m /dev/zero > /mnt/session/outputs/o.bin' });
    expect(out.exitCode).not.toBe(0);
    expect(out.stderr).toMatch(/No space left on device/);
    // the sandbox goes on (reads, deletes), other sandboxes still write
    expect(
      (
        await h.api.exec({
          command: 'rm /tmp/fill && echo freed > /workspace/after.txt && cat /workspace/after.txt',
        })
      ).stdout,
    ).toBe('freed\n');
    expect(
      (await other.api.exec({ command: 'head -c 10m /dev/zero > /workspace/f && echo ok' })).stdout,
    ).toBe('ok\n');
  }, 60_000);

  it('cpu: the sandbox runs under a CFS quota of its vCPUs (busy loops are throttled)', async () => {
    const h = await start();
    const cg = h.confinement!.cgroup!;
    const quotaFile = cg.layout.version === 1 ? 'cpu.cfs_quota_us' : 'cpu.max';
    const cpuDir = cg.byController.cpu!;
    expect(readFileSync(join(cpuDir, quotaFile), 'utf8').trim().split(' ')[0]).toBe(
      String(CAPS.cpus * 100_000),
    );
    await h.api.exec({ command: 'timeout 2 sh -c "while :; do :; done"; true', timeoutMs: 20_000 });
    expect(cg.cpuThrottledPeriods()).toBeGreaterThan(0);
  }, 30_000);

  it('cgroups, the disk image and the mount are removed when the sandbox exits', async () => {
    const h = await start();
    const dirs = h.confinement!.cgroup!.dirs;
    expect(dirs.length).toBeGreaterThan(0);
    for (const d of dirs) expect(existsSync(d)).toBe(true);
    await h.destroy();
    for (const d of dirs) expect(existsSync(d)).toBe(false);
    expect(isMountPoint(h.hostDir)).toBe(false);
    expect(existsSync(`${h.hostDir}.img`)).toBe(false);
    expect(existsSync(h.hostDir)).toBe(false);
  });

  it('with limits off, the sandbox still gets no host environment', async () => {
    const d = createLocalDriver({ rootDir: join(base, 'nolimits'), limits: false });
    try {
      const h = await d.start(testSpec());
      expect(h.confinement).toBeNull();
      const r = await h.api.exec({ command: "tr '\\0' '\\n' < /proc/1/environ; env" });
      for (const v of Object.values(SECRETS)) expect(r.stdout).not.toContain(v);
    } finally {
      await d.close();
    }
  });
});
