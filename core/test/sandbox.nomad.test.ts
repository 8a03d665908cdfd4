/**
 * The Nomad sandbox driver against the Nomad API fake (test/kit/nomad/fake.ts), which runs each
 * job's task on this machine as a child process (raw_exec semantics). The task is what a real
 * client would run: the TCP launcher (sandbox-agent/src/launcher/) in front of the agent wrapped
 * in bubblewrap (nomadAgentCommand), so the driver contract runs end to end: job registration,
 * evaluation and allocation watch with blocking queries, the agent port from the allocation, the
 * token, exit codes from TaskStates, stop and purge. Needs `bwrap`, like the local driver's tests.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer as createHttpServer } from 'node:http';
import * as net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { NomadClient } from '@agentfleet/nomad';
import { startNomadFake, type NomadFake } from '../../test/kit/nomad/fake.js';
import { INSTANCE_SIZES } from '../src/sandbox/port.js';
import {
  allocationExit,
  createNomadDriver,
  type NomadDriver,
  type NomadDriverOptions,
} from '../src/sandbox/drivers/nomad/driver.js';
import { sandboxProgram } from '@agentfleet/sandbox-agent';
import { nomadAgentCommand } from '../src/sandbox/drivers/nomad/command.js';
import { processList, sandboxDriverContract, testSpec } from './sandbox.contract.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const TOKEN = 'nomad-acl-token';
let base: string;
let fake: NomadFake;
let scripts: { launcher: string; agent: string };

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'sbx-nomad-'));
  scripts = {
    launcher: await sandboxProgram('launcher', join(base, 'scripts')),
    agent: await sandboxProgram('agent', join(base, 'scripts')),
  };
  fake = await startNomadFake({
    token: TOKEN,
    namespaces: ['default', 'sandboxes'],
    node: { cpuMhz: 64_000, memoryMb: 65_536 },
  });
});
afterAll(async () => {
  await fake?.close();
  await rm(base, { recursive: true, force: true });
});

/** Host uids of the sandbox agents under the launcher of allocation `allocId` (the fake runs it here). */
function agentHostUids(allocId: string): number[] {
  const parent = new Map<number, number>();
  const uids: Array<{ pid: number; uid: number }> = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!pid) continue;
    try {
      const status = readFileSync(`/proc/${pid}/status`, 'utf8');
      parent.set(pid, Number(/^PPid:\s+(\d+)/m.exec(status)![1]));
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('/opt/agentfleet/agent.mjs'))
        uids.push({ pid, uid: Number(/^Uid:\s+(\d+)/m.exec(status)![1]) });
    } catch {
      /* exited meanwhile */
    }
  }
  const launcher = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/environ`, 'utf8').includes(`NOMAD_ALLOC_ID=${allocId}\0`);
    } catch {
      return false;
    }
  };
  const mine = (pid: number) => {
    for (let p = parent.get(pid) ?? 0; p > 1; p = parent.get(p) ?? 0) if (launcher(p)) return true;
    return false;
  };
  return uids.filter((u) => mine(u.pid)).map((u) => u.uid);
}

const newDriver = (extra: Partial<NomadDriverOptions> = {}): NomadDriver =>
  createNomadDriver({
    client: { address: fake.address, token: TOKEN, namespace: 'sandboxes' },
    agentCommand: (spec) =>
      nomadAgentCommand(spec, {
        node: process.execPath,
        launcher: scripts.launcher,
        agent: scripts.agent,
      }),
    job: { datacenters: ['dc1'], killTimeoutMs: 3000 },
    startTimeoutMs: 30_000,
    watchWait: '5s',
    ...extra,
  });

sandboxDriverContract('nomad (fake Nomad API, raw_exec + bubblewrap)', () => newDriver(), {
  hiddenHostPaths: () => [repoRoot, base, '/root', '/work'],
});

describe('nomad sandbox driver', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  });
  const track = (d: NomadDriver) => {
    cleanups.push(() => d.close());
    return d;
  };

  it('registers one job per session in the namespace: meta, resources from the size, the agent port', async () => {
    const d = track(newDriver());
    const spec = testSpec({ size: 'medium' });
    const h = await d.start(spec);
    cleanups.push(() => h.destroy());
    const job = fake.jobs().find((j) => j.ID === h.jobId)!;
    expect(job).toMatchObject({
      Namespace: 'sandboxes',
      Type: 'batch',
      Meta: {
        tenant_id: spec.tenantId,
        session_id: spec.sessionId,
        environment_id: spec.environmentId,
        instance_size: 'medium',
      },
    });
    const task = job.TaskGroups[0].Tasks[0];
    expect(task.Driver).toBe('raw_exec');
    expect(task.Resources).toEqual({
      CPU: INSTANCE_SIZES.medium.cpus * 2000,
      MemoryMB: INSTANCE_SIZES.medium.memoryMb,
      MemoryMaxMB: INSTANCE_SIZES.medium.memoryMb,
    });
    expect(job.TaskGroups[0].EphemeralDisk.SizeMB).toBe(INSTANCE_SIZES.medium.diskMb);
    expect(task.Env.AGENTFLEET_AGENT_TOKEN).toMatch(/^[0-9a-f]{48}$/);
    const alloc = fake.allocations().find((a) => a.ID === h.allocId)!;
    expect(alloc.ClientStatus).toBe('running');
    expect(h.address).toEqual({
      host: '127.0.0.1',
      port: alloc.AllocatedResources.Shared.Ports[0].Value,
    });
    // every request carried the token and the namespace; the allocation is watched with blocking queries
    const mine = fake.requests.filter(
      (r) => r.path.includes(h.jobId) || r.path.includes(h.allocId),
    );
    expect(mine.every((r) => r.token === TOKEN && r.query.namespace === 'sandboxes')).toBe(true);
    expect(
      mine.some(
        (r) =>
          r.path === `/v1/allocation/${h.allocId}` && Number(r.query.index) > 0 && r.query.wait,
      ),
    ).toBe(true);
    // the token stays with the launcher: the sandbox does not see it, nor host paths in its process list
    expect((await h.api.exec({ command: 'env' })).stdout).not.toContain('AGENTFLEET_AGENT_TOKEN');
    const ps = await processList(h.api);
    for (const hostPath of [scripts.launcher, scripts.agent, base, task.Env.AGENTFLEET_AGENT_TOKEN])
      expect(ps).not.toContain(hostPath);
  });

  it("no host environment in the sandbox: the task env holds only the launcher's variables, the sandbox starts with none of the task's", async () => {
    // the fake passes its own environment on to raw_exec tasks, as a Nomad client may
    const secrets = {
      API_KEY: 'nomad-test-op-key-3e9a1c',
      PLATFORM_ROOT_SECRET: 'nomad-test-root-secret-b7d2f0a4',
      ANTHROPIC_API_KEY: 'sk-ant-nomad-test-5c1e',
    };
    const saved = Object.fromEntries(Object.keys(secrets).map((k) => [k, process.env[k]]));
    Object.assign(process.env, secrets);
    try {
      const d = track(newDriver());
      const h = await d.start(testSpec({ env: { TENANT_VAR: 'tenant-value' } }));
      cleanups.push(() => h.destroy());
      const task = fake.jobs().find((j) => j.ID === h.jobId)!.TaskGroups[0].Tasks[0];
      expect(Object.keys(task.Env).sort()).toEqual([
        'AGENTFLEET_AGENT_LISTEN',
        'AGENTFLEET_AGENT_TOKEN',
        'AGENTFLEET_SESSION_ID',
      ]);
      const r = await h.api.exec({
        command:
          "env; for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do echo \"== $f\"; tr '\\0' '\\n' < $f; done",
      });
      expect(r.stdout).toContain('TENANT_VAR=tenant-value');
      expect(r.stdout).toContain('== /proc/1/environ');
      for (const v of [...Object.values(secrets), task.Env.AGENTFLEET_AGENT_TOKEN, base])
        expect(r.stdout).not.toContain(v);
      expect((await h.api.exec({ command: 'wc -c < /proc/1/environ' })).stdout.trim()).toBe('0');
    } finally {
      for (const [k, v] of Object.entries(saved)) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });

  it('limits on the client: the launcher confines the sandbox (process cap, memory, disk) and leaves nothing behind', async () => {
    const caps = { processes: 64, memoryMb: 128, diskMb: 64 };
    const d = track(
      newDriver({
        limitCaps: caps,
        agentCommand: (spec) =>
          nomadAgentCommand(spec, {
            node: process.execPath,
            launcher: scripts.launcher,
            agent: scripts.agent,
            limits: { caps },
          }),
      }),
    );
    const h = await d.start(testSpec());
    const other = await d.start(testSpec());
    cleanups.push(
      () => h.destroy(),
      () => other.destroy(),
    );
    // the job reserves what the launcher enforces
    const registered = fake.jobs().find((j) => j.ID === h.jobId)!.TaskGroups[0];
    expect(registered.Tasks[0].Resources).toMatchObject({ MemoryMB: 128, MemoryMaxMB: 128 });
    expect(registered.EphemeralDisk.SizeMB).toBe(64);
    const args = fake.jobs().find((j) => j.ID === h.jobId)!.TaskGroups[0].Tasks[0].Config
      .args as string[];
    expect(args[args.indexOf('--limits') + 1]).toBe('processes=64,memoryMb=128,cpus=1,diskMb=64');
    // disk: one filesystem of the capped size for workspace, tmp, home and outputs
    const df = await h.api.exec({
      command: 'df -k /workspace /tmp /home/user /mnt/session/outputs | tail -n +2',
    });
    const rows = df.stdout
      .trim()
      .split('\n')
      .map((l) => l.split(/\s+/));
    expect(new Set(rows.map((r) => r[0])).size).toBe(1);
    expect(Number(rows[0][1])).toBeLessThanOrEqual(64 * 1024);
    const fill = await h.api.exec({
      command: 'head -c 100m /dev/zero > /workspace/fill; echo "status=$?"',
    });
    expect(fill.stdout).toBe('status=1\n');
    expect(fill.stderr).toMatch(/No space left on device/);
    await h.api.exec({ command: 'rm -f /workspace/fill' });
    // memory: the hog is OOM-killed inside
    const hog = await h.api.exec({
      command: 'bash -c \'x=$(head -c 400m /dev/zero | tr "\\0" a); echo ${#x}\'; echo "status=$?"',
      timeoutMs: 60_000,
    });
    expect(hog.stdout).toMatch(/status=(137|1\d\d)/);
    // processes: a fork bomb stays inside; the other sandbox works meanwhile; the watchdog frees the slots
    const bomb = h.api.exec({
      command: "timeout -s KILL 5 bash -c ':(){ :|:& };:'",
      timeoutMs: 30_000,
    });
    expect((await other.api.exec({ command: 'echo alive' })).stdout).toBe('alive\n');
    await bomb;
    await expect
      .poll(async () => (await h.api.exec({ command: 'echo ok' }).catch(() => null))?.stdout, {
        timeout: 15_000,
        interval: 500,
      })
      .toBe('ok\n');
    // the disk is already detached on the client: killing the launcher leaves no mount behind
    const alloc = fake.allocations().find((a) => a.ID === h.allocId)!;
    const mounts = () =>
      readFileSync('/proc/self/mountinfo', 'utf8')
        .split('\n')
        .filter((l) => l.includes(alloc.ID));
    expect(mounts()).toEqual([]);
    await h.destroy();
    expect(mounts()).toEqual([]);
  }, 90_000);

  it('the sandbox host user on the client: a root launcher runs bwrap as the unprivileged uid', async () => {
    const hostUser = { uid: 100_000, gid: 100_000, within: [base] };
    const d = track(
      newDriver({
        agentCommand: (spec) =>
          nomadAgentCommand(spec, {
            node: process.execPath,
            launcher: scripts.launcher,
            agent: scripts.agent,
            hostUser,
          }),
      }),
    );
    const h = await d.start(testSpec());
    cleanups.push(() => h.destroy());
    const r = await h.api.exec({
      command: 'id -u; echo x > /workspace/f && stat -c %u /workspace/f',
    });
    expect(r.stdout).toBe('1000\n1000\n');
    // seen from this host: the sandbox's processes (descendants of this test process running
    // the agent) are the unprivileged uid, never root
    const uids = agentHostUids(h.allocId);
    expect(uids.length).toBeGreaterThan(0);
    expect(new Set(uids)).toEqual(
      new Set([process.getuid?.() === 0 ? 100_000 : process.getuid!()]),
    );
  }, 60_000);

  it("outbound traffic goes through the platform proxy (spec.proxyUrl), via the launcher's unix socket", async () => {
    const seen: string[] = [];
    const proxy = createHttpServer((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers['proxy-authorization'] ?? ''}`);
      res.end(`proxied ${req.url}`);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise((r) => proxy.close(r)));
    const port = (proxy.address() as { port: number }).port;
    const d = track(newDriver());
    const h = await d.start(testSpec({ proxyUrl: `http://sess:pw@127.0.0.1:${port}` }));
    cleanups.push(() => h.destroy());
    expect((await h.api.exec({ command: 'echo $HTTP_PROXY' })).stdout).toBe(
      'http://sess:pw@127.0.0.1:3128\n',
    );
    const get = await h.api.exec({
      command: `node -e "require('http').get({host:'127.0.0.1',port:3128,path:'http://example.test/hello',headers:{'proxy-authorization':'Basic x'}},r=>{let b='';r.on('data',c=>b+=c);r.on('end',()=>console.log(r.statusCode,b))}).on('error',e=>console.log('error',e.code))"`,
      timeoutMs: 15_000,
    });
    expect(get.stdout).toBe('200 proxied http://example.test/hello\n');
    expect(seen).toEqual(['GET http://example.test/hello Basic x']);
    // nothing else: the proxy's port itself is not reachable directly
    const direct = await h.api.exec({
      command: `node -e "require('net').connect(${port},'127.0.0.1').on('connect',()=>console.log('connected')).on('error',e=>console.log(e.code))"`,
      timeoutMs: 15_000,
    });
    expect(direct.stdout.trim()).toBe('ECONNREFUSED');
  });

  it('the agent port refuses a connection without the sandbox token', async () => {
    const d = track(newDriver());
    const h = await d.start(testSpec());
    cleanups.push(() => h.destroy());
    const reply = await new Promise<string>((resolve) => {
      const s = net.connect(h.address.port, h.address.host);
      let buf = '';
      s.on('connect', () =>
        s.write(
          '{"jsonrpc":"2.0","method":"auth","params":{"token":"wrong"}}\n{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}\n',
        ),
      );
      s.on('data', (c) => (buf += c));
      s.on('close', () => resolve(buf));
    });
    expect(reply).toContain('authentication failed');
    expect(reply).not.toContain('"result"');
    await h.api.ping();
  });

  it('stop deregisters (the job stays, stopped); destroy purges it', async () => {
    const d = track(newDriver());
    const a = await d.start(testSpec());
    await a.stop();
    expect(await a.exited).toHaveProperty('code');
    expect(fake.jobs().find((j) => j.ID === a.jobId)).toMatchObject({ Stop: true, Status: 'dead' });
    expect(fake.allocations().find((x) => x.ID === a.allocId)).toMatchObject({
      DesiredStatus: 'stop',
      ClientStatus: 'complete',
    });
    await a.destroy(); // after stop: purges
    expect(fake.jobs().some((j) => j.ID === a.jobId)).toBe(false);
    const b = await d.start(testSpec());
    await b.destroy();
    await b.exited;
    expect(fake.jobs().some((j) => j.ID === b.jobId)).toBe(false);
    await expect(b.api.ping()).rejects.toMatchObject({ kind: 'closed' });
  });

  it('a crash (SIGKILL of the task) and an OOM kill resolve exited with 137, pending calls rejected as closed', async () => {
    const d = track(newDriver());
    const a = await d.start(testSpec());
    cleanups.push(() => a.destroy());
    const call = a.api.exec({ command: 'sleep 30' }).then(
      () => null,
      (e: unknown) => e,
    );
    await new Promise((r) => setTimeout(r, 200));
    process.kill(-fake.pid(a.allocId)!, 'SIGKILL');
    expect(await a.exited).toEqual({ code: 137, signal: 'SIGKILL' });
    expect(await call).toMatchObject({ kind: 'closed' });
    expect(fake.allocations().find((x) => x.ID === a.allocId)!.ClientStatus).toBe('failed');

    const b = await d.start(testSpec());
    cleanups.push(() => b.destroy());
    fake.simulateOom(b.allocId);
    expect(await b.exited).toEqual({ code: 137, signal: 'SIGKILL' });
    const alloc = fake.allocations().find((x) => x.ID === b.allocId)!;
    expect(
      alloc.TaskStates.agent.Events.find((e: { Type: string }) => e.Type === 'Terminated').Details
        .oom_killed,
    ).toBe('true');
  });

  it('reads exit codes from TaskStates: the last Terminated event, OOM as 137', () => {
    const alloc = (events: unknown[]) =>
      ({
        ID: 'a',
        JobID: 'j',
        TaskGroup: 'sandbox',
        DesiredStatus: 'run',
        ClientStatus: 'failed',
        CreateIndex: 1,
        ModifyIndex: 2,
        TaskStates: { agent: { State: 'dead', Failed: true, Events: events } },
      }) as never;
    expect(
      allocationExit(
        alloc([
          { Type: 'Started', Time: 1 },
          { Type: 'Terminated', Time: 2, ExitCode: 3, Signal: 0 },
        ]),
      ),
    ).toEqual({ code: 3, signal: null });
    expect(
      allocationExit(
        alloc([
          { Type: 'Terminated', Time: 2, ExitCode: 143, Signal: 15 },
          { Type: 'Killed', Time: 3 },
        ]),
      ),
    ).toEqual({ code: 143, signal: 'SIGTERM' });
    expect(
      allocationExit(
        alloc([
          { Type: 'Terminated', Time: 2, ExitCode: 0, Signal: 0, Details: { oom_killed: 'true' } },
        ]),
      ),
    ).toEqual({ code: 137, signal: 'SIGKILL' });
    expect(allocationExit(alloc([{ Type: 'Driver Failure', Time: 2 }]))).toEqual({
      code: null,
      signal: null,
    });
  });

  it("a placement failure is reported with Nomad's reason and the job purged", async () => {
    const small = await startNomadFake({ node: { cpuMhz: 64_000, memoryMb: 8192 } });
    try {
      const d = track(newDriver({ client: { address: small.address } }));
      const err = await d.start(testSpec({ size: 'large' })).catch((e: Error) => e);
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(/could not place the sandbox job .*exhausted memory/);
      expect(small.jobs()).toEqual([]);
    } finally {
      await small.close();
    }
  });

  it('a task that cannot start is reported with its events and stderr, and the job purged', async () => {
    const d = track(
      newDriver({
        agentCommand: [
          process.execPath,
          '-e',
          "console.error('agent: missing config'); process.exit(2)",
        ],
      }),
    );
    const spec = testSpec();
    const err = await d.start(spec).catch((e: Error) => e);
    expect((err as Error).message).toMatch(
      /did not start .*failed.*Exit Code: 2.*agent: missing config/s,
    );
    expect(fake.jobs().some((j) => j.Meta?.session_id === spec.sessionId)).toBe(false);
  });

  it('rejects a second sandbox for the same session and invalid specs', async () => {
    const d = track(newDriver());
    const spec = testSpec();
    const h = await d.start(spec);
    cleanups.push(() => h.destroy());
    await expect(d.start(spec)).rejects.toThrow(/already running/);
    await expect(d.start(testSpec({ sessionId: '../escape' }))).rejects.toThrow(/sessionId/);
    await expect(d.start(testSpec({ env: { HTTP_PROXY: 'http://evil' } }))).rejects.toThrow(
      /reserved/,
    );
    await expect(d.start(testSpec({ env: { NOMAD_TOKEN: 'x' } }))).rejects.toThrow(/reserved/);
  });

  it('a wrong Nomad token is refused with 403 before anything is registered', async () => {
    const d = track(
      newDriver({
        client: new NomadClient({ address: fake.address, token: 'wrong', namespace: 'sandboxes' }),
      }),
    );
    await expect(d.start(testSpec())).rejects.toMatchObject({ status: 403 });
  });
});
