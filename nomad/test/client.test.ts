import { rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startNomadFake, type NomadFake } from '../../test/kit/nomad/fake.js';
import { durationMs, NomadClient, NomadError, type Job } from '../src/index.js';
import { firstAlloc, nodeJob, SLEEP, uniq, waitFor } from './nomadTestHelpers.js';

describe('NomadClient against the Nomad fake', () => {
  let fake: NomadFake;
  let client: NomadClient;
  beforeAll(async () => {
    fake = await startNomadFake({
      token: 'secret-token',
      namespaces: ['default', 'tenant-a'],
      node: { cpuMhz: 8000, memoryMb: 8192 },
    });
    client = new NomadClient({ address: fake.address, token: 'secret-token' });
  });
  afterAll(async () => {
    await fake?.close();
  });

  it('registers a job, reads it, its evaluation and its allocation until it runs', async () => {
    const id = uniq('reg');
    const reg = await client.registerJob(
      nodeJob(id, SLEEP, { port: true, env: { MY_PORT: '${NOMAD_PORT_http}' } }),
    );
    expect(reg.EvalID).toMatch(/^[0-9a-f-]{36}$/);
    expect(reg.JobModifyIndex).toBeGreaterThan(0);
    const { data: job, index } = await client.getJob(id);
    expect(job).toMatchObject({
      ID: id,
      Namespace: 'default',
      Type: 'batch',
      Meta: { purpose: 'test' },
    });
    expect(index).toBeGreaterThan(0);
    const allocId = await firstAlloc(client, id);
    const alloc = await waitFor(client, allocId, (a) => a.ClientStatus === 'running');
    expect(alloc.JobID).toBe(id);
    expect(alloc.TaskStates!.t.State).toBe('running');
    expect(alloc.TaskStates!.t.Events!.map((e) => e.Type)).toEqual([
      'Received',
      'Task Setup',
      'Started',
    ]);
    const port = alloc.AllocatedResources!.Shared!.Ports!.find((p) => p.Label === 'http')!;
    expect(port.Value).toBeGreaterThan(0);
    expect(port.HostIP).toBe('127.0.0.1');
    const { data: ev } = await client.getEvaluation(reg.EvalID);
    expect(ev).toMatchObject({
      ID: reg.EvalID,
      JobID: id,
      Status: 'complete',
      TriggeredBy: 'job-register',
      FailedTGAllocs: null,
    });
    expect((await client.getJob(id)).data.Status).toBe('running');
    await client.stopJob(id, { purge: true });
  });

  it('passes NOMAD_* variables and interpolates them in env (raw_exec semantics)', async () => {
    const id = uniq('env');
    const script =
      'console.log(JSON.stringify({ port: process.env.MY_PORT, alloc: process.env.NOMAD_ALLOC_ID, job: process.env.NOMAD_JOB_ID, meta: process.env.NOMAD_META_purpose, cwd: process.cwd() }))';
    await client.registerJob(
      nodeJob(id, script, { port: true, env: { MY_PORT: '${NOMAD_PORT_http}' } }),
    );
    const allocId = await firstAlloc(client, id);
    const alloc = await waitFor(client, allocId, (a) => a.ClientStatus === 'complete');
    const out = JSON.parse(await client.allocLogs(allocId, 't'));
    const port = alloc.AllocatedResources!.Shared!.Ports![0].Value;
    expect(out).toMatchObject({ port: String(port), alloc: allocId, job: id, meta: 'test' });
    expect(out.cwd).toContain(allocId);
    await client.stopJob(id, { purge: true });
  });

  it('blocking query returns when the index moves, well before the wait', async () => {
    const id = uniq('block');
    const flag = join(tmpdir(), `${id}.flag`);
    // runs until the test creates `flag`
    await client.registerJob(
      nodeJob(
        id,
        `setInterval(() => { if (require('node:fs').existsSync(${JSON.stringify(flag)})) process.exit(0); }, 20)`,
      ),
    );
    const allocId = await firstAlloc(client, id);
    const running = await waitFor(client, allocId, (a) => a.ClientStatus === 'running');
    const { index } = await client.getAllocation(allocId);
    expect(index).toBe(running.ModifyIndex);
    const t0 = Date.now();
    setTimeout(() => writeFileSync(flag, ''), 300);
    const next = await client.getAllocation(allocId, { index, wait: '20s' });
    rmSync(flag, { force: true });
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(next.index).toBeGreaterThan(index);
    expect(next.data.ClientStatus).toBe('complete');
    expect(next.data.TaskStates!.t.Events!.find((e) => e.Type === 'Terminated')!.ExitCode).toBe(0);
    await client.stopJob(id, { purge: true });
  });

  it('blocking query returns the unchanged resource when the wait expires', async () => {
    const id = uniq('wait');
    await client.registerJob(nodeJob(id, SLEEP));
    const allocId = await firstAlloc(client, id);
    await waitFor(client, allocId, (a) => a.ClientStatus === 'running');
    const { index } = await client.getAllocation(allocId);
    const t0 = Date.now();
    const same = await client.getAllocation(allocId, { index, wait: 400 });
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(350);
    expect(took).toBeLessThan(3_000);
    expect(same.index).toBe(index);
    expect(same.data.ClientStatus).toBe('running');
    expect(
      fake.requests.some(
        (r) =>
          r.path === `/v1/allocation/${allocId}` &&
          r.query.wait === '400ms' &&
          r.query.index === String(index),
      ),
    ).toBe(true);
    // jobAllocations blocks on the allocations table the same way
    const j = await client.jobAllocations(id);
    const t1 = Date.now();
    const j2 = await client.jobAllocations(id, { index: j.index, wait: '300ms' });
    expect(Date.now() - t1).toBeGreaterThanOrEqual(250);
    expect(j2.data.map((a) => a.ID)).toEqual([allocId]);
    await client.stopJob(id, { purge: true });
  });

  it('lists allocations page by page with next tokens, and iterates all pages', async () => {
    const id = uniq('pages');
    await client.registerJob(nodeJob(id, 'setTimeout(() => {}, 30000)', { count: 5 }));
    let index = 0;
    for (let i = 0; i < 50; i++) {
      const r = await client.jobAllocations(id, { index, wait: '2s' });
      if (r.data.length === 5) break;
      index = r.index;
    }
    const all = (await client.listAllocations()).data
      .filter((a) => a.JobID === id)
      .map((a) => a.ID);
    expect(all).toHaveLength(5);
    const everything = (await client.listAllocations()).data.map((a) => a.ID);
    expect(everything).toEqual([...everything].sort());

    const pages: string[][] = [];
    let token: string | undefined;
    do {
      const page = await client.listAllocations({ perPage: 2, nextToken: token });
      pages.push(page.data.map((a) => a.ID));
      token = page.nextToken;
      expect(page.data.length).toBeLessThanOrEqual(2);
    } while (token);
    expect(pages.length).toBe(Math.ceil(everything.length / 2));
    expect(pages.flat()).toEqual(everything);

    const iterated: string[] = [];
    for await (const a of client.iterateAllocations({ perPage: 2 })) iterated.push(a.ID);
    expect(iterated).toEqual(everything);

    const prefix = all[0].slice(0, 8);
    const byPrefix = await client.listAllocations({ prefix, resources: true, taskStates: false });
    expect(byPrefix.data.map((a) => a.ID)).toContain(all[0]);
    expect(byPrefix.data[0].AllocatedResources).toBeTruthy();
    expect(byPrefix.data[0].TaskStates).toBeUndefined();
    await client.stopJob(id, { purge: true });
  });

  it('stops a job (kill signal, Killed event, complete) and then purges it', async () => {
    const id = uniq('stop');
    await client.registerJob(nodeJob(id, SLEEP));
    const allocId = await firstAlloc(client, id);
    await waitFor(client, allocId, (a) => a.ClientStatus === 'running');
    const pid = fake.pid(allocId)!;
    expect(pid).toBeGreaterThan(0);
    const stop = await client.stopJob(id);
    expect(stop.EvalID).toBeTruthy();
    const done = await waitFor(client, allocId, (a) => a.ClientStatus === 'complete');
    expect(done.DesiredStatus).toBe('stop');
    expect(done.TaskStates!.t.Events!.map((e) => e.Type)).toEqual(
      expect.arrayContaining(['Killing', 'Terminated', 'Killed']),
    );
    expect(() => process.kill(pid, 0)).toThrow();
    const { data: stopped } = await client.getJob(id);
    expect(stopped).toMatchObject({ Stop: true, Status: 'dead' });
    await client.stopJob(id, { purge: true });
    const err = await client.getJob(id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NomadError);
    expect(err).toMatchObject({ status: 404, nomadMessage: 'job not found' });
    expect(fake.jobs().some((j) => j.ID === id)).toBe(false);
  });

  it('reports a failed task with its exit code, and its logs', async () => {
    const id = uniq('fail');
    await client.registerJob(
      nodeJob(
        id,
        "process.stdout.write('out-1\\nout-2\\n'); process.stderr.write('boom'); process.exit(3)",
      ),
    );
    const allocId = await firstAlloc(client, id);
    const alloc = await waitFor(client, allocId, (a) => a.ClientStatus === 'failed');
    const term = alloc.TaskStates!.t.Events!.find((e) => e.Type === 'Terminated')!;
    expect(term.ExitCode).toBe(3);
    expect(alloc.TaskStates!.t.Failed).toBe(true);
    expect(await client.allocLogs(allocId, 't')).toBe('out-1\nout-2\n');
    expect(await client.allocLogs(allocId, 't', { type: 'stderr' })).toBe('boom');
    expect(await client.allocLogs(allocId, 't', { origin: 'end', offset: 6 })).toBe('out-2\n');
    expect(await client.allocLogs(allocId, 't', { offset: 6 })).toBe('out-2\n');
    const err = await client.allocLogs(allocId, 'nope').catch((e: unknown) => e);
    expect(err).toMatchObject({ status: 400 });
    await client.stopJob(id, { purge: true });
  });

  it('records a placement failure on the evaluation (missing driver)', async () => {
    const id = uniq('nodriver');
    const job = nodeJob(id, SLEEP);
    job.TaskGroups[0].Tasks[0].Driver = 'docker';
    const reg = await client.registerJob(job);
    let ev = (await client.getEvaluation(reg.EvalID)).data;
    for (let index = 0; ev.Status === 'pending';)
      ({ data: ev, index } = await client.getEvaluation(reg.EvalID, { index, wait: '2s' }));
    expect(ev.Status).toBe('complete');
    expect(ev.FailedTGAllocs!.g.ConstraintFiltered).toEqual({ 'missing drivers': 1 });
    expect(ev.BlockedEval).toBeTruthy();
    expect((await client.getEvaluation(ev.BlockedEval!)).data.Status).toBe('blocked');
    expect((await client.jobAllocations(id)).data).toEqual([]);
    await client.stopJob(id, { purge: true });
  });

  it("carries the status and Nomad's message on errors", async () => {
    const err = await client
      .registerJob({ ID: uniq('bad'), TaskGroups: [] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NomadError);
    expect((err as NomadError).status).toBe(400);
    expect((err as NomadError).nomadMessage).toContain('Missing job task groups');
    expect((err as NomadError).message).toContain('POST /v1/jobs');
    expect(
      await client
        .getAllocation('00000000-0000-0000-0000-000000000000')
        .catch((e: NomadError) => e.status),
    ).toBe(404);
    const down = new NomadClient({ address: 'http://127.0.0.1:1' });
    expect(await down.getJob('x').catch((e: NomadError) => e.status)).toBe(0);
  });

  it('refuses a wrong or missing ACL token with 403, and sends X-Nomad-Token on every request', async () => {
    for (const token of ['wrong', undefined]) {
      const c = new NomadClient({ address: fake.address, token });
      const err = await c.getJob('anything').catch((e: unknown) => e);
      expect(err).toMatchObject({ status: 403, nomadMessage: 'Permission denied' });
      expect(await c.listAllocations().catch((e: NomadError) => e.status)).toBe(403);
      expect(
        await c.registerJob(nodeJob(uniq('acl'), SLEEP)).catch((e: NomadError) => e.status),
      ).toBe(403);
    }
    expect(fake.jobs().some((j) => j.ID.startsWith('acl-'))).toBe(false);
    const mine = fake.requests.filter((r) => r.token === 'secret-token');
    expect(mine.length).toBeGreaterThan(10);
  });

  it('honours the namespace on every request', async () => {
    const a = new NomadClient({
      address: fake.address,
      token: 'secret-token',
      namespace: 'tenant-a',
    });
    const id = uniq('ns');
    const before = fake.requests.length;
    await a.registerJob(nodeJob(id, SLEEP));
    expect(fake.jobs().find((j) => j.ID === id)!.Namespace).toBe('tenant-a');
    expect((await a.getJob(id)).data.Namespace).toBe('tenant-a');
    expect(await client.getJob(id).catch((e: NomadError) => e.status)).toBe(404); // the default namespace does not see it
    const allocId = await firstAlloc(a, id);
    expect((await client.jobAllocations(id)).data).toEqual([]);
    expect(await client.getAllocation(allocId).catch((e: NomadError) => e.status)).toBe(404);
    expect((await a.getAllocation(allocId)).data.Namespace).toBe('tenant-a');
    expect((await client.listAllocations()).data.some((x) => x.ID === allocId)).toBe(false);
    expect((await a.listAllocations()).data.some((x) => x.ID === allocId)).toBe(true);
    expect(
      (await client.listAllocations({ namespace: '*' })).data.some((x) => x.ID === allocId),
    ).toBe(true);
    expect(await client.stopJob(id).catch((e: NomadError) => e.status)).toBe(404);
    await a.stopJob(id, { purge: true });
    const sent = fake.requests
      .slice(before)
      .filter((r) => !r.query.namespace || r.query.namespace === 'tenant-a');
    for (const r of fake.requests.slice(before))
      if (!r.path.startsWith('/v1/allocations') || r.query.namespace !== '*')
        expect(r.query.namespace === 'tenant-a' || r.query.namespace === undefined).toBe(true);
    expect(sent.filter((r) => r.query.namespace === 'tenant-a').length).toBeGreaterThanOrEqual(6);
    const err = await new NomadClient({
      address: fake.address,
      token: 'secret-token',
      namespace: 'nope',
    })
      .registerJob(nodeJob(uniq('ns'), SLEEP))
      .catch((e: NomadError) => e);
    expect(err).toMatchObject({ status: 400 });
    expect(err.nomadMessage).toContain('nonexistent namespace');
  });

  it('sends the region on every request', async () => {
    const g = new NomadClient({ address: fake.address, token: 'secret-token', region: 'global' });
    await g.listAllocations();
    expect(fake.requests.at(-1)!.query.region).toBe('global');
    const mars = new NomadClient({ address: fake.address, token: 'secret-token', region: 'mars' });
    expect(
      await mars.listAllocations().catch((e: NomadError) => `${e.status} ${e.nomadMessage}`),
    ).toBe('500 No path to region');
  });

  it('parses Go durations', () => {
    expect(durationMs('5s')).toBe(5000);
    expect(durationMs('1m30s')).toBe(90_000);
    expect(durationMs('250ms')).toBe(250);
    expect(durationMs(42)).toBe(42);
    expect(() => durationMs('5 seconds')).toThrow();
  });
});
