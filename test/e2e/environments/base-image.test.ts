/**
 * An environment's `base_image` against the sandbox driver (core/src/environments/baseImage.ts):
 * - local (bubblewrap) driver: refused with a 400 naming `base_image` and the Nomad driver at
 *   environment create and update (TypeScript SDK and HTTP); a session on an environment stored
 *   with one is refused (field environment_id); the local driver itself refuses to start a
 *   sandbox with one.
 * - Nomad driver with SANDBOX_NOMAD_BASE_IMAGES=true: accepted and served; a session's sandbox
 *   job is submitted with the docker task driver running that image, the node binary, launcher
 *   and agent bound read-only, the agent port published. What this proves is the submitted job
 *   spec only: the Nomad fake (test/kit/nomad/) runs no docker tasks, so it refuses the job at
 *   placement (missing drivers) as a Nomad client without docker would, and the session reports
 *   that failure.
 * - Nomad driver without that setting: refused (fail closed), by the API and by the driver.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import { addModelCard } from '../../kit/turnHelpers.js';
import { startNomadFake, type NomadFake } from '../../kit/nomad/fake.js';

const MODEL = 'image-model';
const IMAGE = 'python:3.12-slim';

async function badRequest(p: Promise<unknown>) {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Anthropic.BadRequestError);
  return err as InstanceType<typeof Anthropic.BadRequestError> & { error: any };
}

async function addModel(t: TestPlatform) {
  await addModelCard(t, MODEL);
}

describe('base_image on the local (bubblewrap) driver', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform({ env: { SANDBOX_DRIVER: 'local' } });
    await addModel(t);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('is refused at environment create and update with a 400 naming base_image and the Nomad driver', async () => {
    const err = await badRequest(
      t.client.beta.environments.create({ name: 'img', base_image: IMAGE } as any),
    );
    expect(err.status).toBe(400);
    expect(err.error.error.details.field).toBe('base_image');
    expect(err.error.error.message).toContain('Nomad');
    expect(err.error.error.message).toContain('SANDBOX_DRIVER=nomad');

    const env = await t.client.beta.environments.create({ name: 'host-image' });
    expect((env as any).base_image).toBeNull();
    const upd = await t.http(`/v1/environments/${env.id}`, {
      method: 'POST',
      headers: BETA,
      json: { base_image: IMAGE },
    });
    expect(upd.status).toBe(400);
    const body = (await upd.json()) as any;
    expect(body.error.type).toBe('invalid_request');
    expect(body.error.details.field).toBe('base_image');
    expect(body.error.message).toContain('Nomad');
    // nothing was stored
    expect(((await t.client.beta.environments.retrieve(env.id)) as any).base_image).toBeNull();
  });

  it('refuses a session on an environment stored with a base_image, and the driver refuses to start one', async () => {
    const tenant = await t.newTenant('img-tenant');
    const env = await tenant.client.beta.environments.create({ name: 'old' });
    // as if stored before the check (or under another driver)
    await t.server.platform.collections.environments.updateOne(
      tenant.tenantId,
      { _id: env.id },
      { $set: { base_image: IMAGE } },
    );
    const agent = await tenant.client.beta.agents.create({ name: 'a', model: MODEL });
    const err = await badRequest(
      tenant.client.beta.sessions.create({ agent: agent.id, environment_id: env.id }),
    );
    expect(err.error.error.details.field).toBe('environment_id');
    expect(err.error.error.message).toContain('base_image');

    const driver = t.server.sandboxes!.driver;
    expect(driver.name).toBe('local');
    await expect(
      driver.start({
        tenantId: tenant.tenantId,
        sessionId: 'sesn_base_image_refused',
        environmentId: env.id,
        size: 'small',
        env: {},
        proxyUrl: null,
        baseImage: IMAGE,
      }),
    ).rejects.toThrow(/base_image .* needs the Nomad sandbox driver/);
  });
});

describe('base_image on the Nomad driver (against the Nomad API fake)', () => {
  let fake: NomadFake;
  let t: TestPlatform;
  beforeAll(async () => {
    fake = await startNomadFake({ node: { cpuMhz: 16_000, memoryMb: 65_536 } });
    t = await startPlatform({
      env: {
        SANDBOX_DRIVER: 'nomad',
        NOMAD_ADDR: fake.address,
        SANDBOX_NOMAD_BASE_IMAGES: 'true',
      },
    });
    await addModel(t);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  it('serves base_image and submits a docker job running it; the fake (no docker) refuses it at placement', async () => {
    const env = await t.client.beta.environments.create({ name: 'img', base_image: IMAGE } as any);
    expect((env as any).base_image).toBe(IMAGE);
    expect(((await t.client.beta.environments.retrieve(env.id)) as any).base_image).toBe(IMAGE);

    const agent = await t.client.beta.agents.create({
      name: 'img',
      model: MODEL,
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    const session = await t.client.beta.sessions.create({
      agent: agent.id,
      environment_id: env.id,
    });
    t.model.script(
      MODEL,
      { steps: [{ tool_use: { name: 'bash', input: { command: 'echo hi' } } }] },
      { steps: [{ text: 'done' }] },
    );
    const stream = await t.client.beta.sessions.events.stream(session.id);
    await t.client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'run' }] }],
    });
    const seen: any[] = [];
    for await (const ev of stream as AsyncIterable<any>) {
      seen.push(ev);
      if (ev.type === 'session.status_idle' || ev.type === 'session.status_terminated') break;
    }

    const job = fake.submittedJobs.find((j) => j.Meta?.session_id === session.id);
    expect(job).toBeDefined();
    expect(job.Meta.base_image).toBe(IMAGE);
    const task = job.TaskGroups[0].Tasks[0];
    expect(task.Driver).toBe('docker');
    expect(task.Config.image).toBe(IMAGE);
    expect(task.Config.ports).toEqual(['agent']);
    expect(task.Config.cap_drop).toEqual(['ALL']);
    expect(task.Config.security_opt).toEqual(['no-new-privileges']);
    expect(task.Config.pids_limit).toBeGreaterThan(0);
    const targets = task.Config.mount.map((m: any) => [m.type, m.target, m.readonly]);
    expect(targets).toEqual([
      ['bind', '/opt/agentfleet/bin/node', true],
      ['bind', '/opt/agentfleet/launcher.mjs', true],
      ['bind', '/opt/agentfleet/agent.mjs', true],
    ]);
    // the launcher runs the agent directly inside the container (no bubblewrap on the client)
    expect(task.Config.command).toBe('/opt/agentfleet/bin/node');
    expect(task.Config.args.slice(0, 1)).toEqual(['/opt/agentfleet/launcher.mjs']);
    expect(task.Config.args.slice(-3)).toEqual([
      '--',
      '/opt/agentfleet/bin/node',
      '/opt/agentfleet/agent.mjs',
    ]);
    expect(task.Config.args).not.toContain('bwrap');
    expect(task.Env.AGENTFLEET_AGENT_LISTEN).toBe('0.0.0.0:${NOMAD_PORT_agent}');

    // the fake has no docker driver: placement fails, and the session says so
    expect(JSON.stringify(seen)).toMatch(/missing drivers|could not place/);
  }, 90_000);
});

describe('base_image on the Nomad driver without SANDBOX_NOMAD_BASE_IMAGES', () => {
  let fake: NomadFake;
  let t: TestPlatform;
  beforeAll(async () => {
    fake = await startNomadFake();
    t = await startPlatform({ env: { SANDBOX_DRIVER: 'nomad', NOMAD_ADDR: fake.address } });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await fake?.close();
  });

  it('is refused (fail closed) with a 400 naming base_image and the setting', async () => {
    const err = await badRequest(
      t.client.beta.environments.create({ name: 'img', base_image: IMAGE } as any),
    );
    expect(err.error.error.details.field).toBe('base_image');
    expect(err.error.error.message).toContain('SANDBOX_NOMAD_BASE_IMAGES=true');
    // the driver refuses one too, before registering anything
    const driver = t.server.sandboxes!.driver;
    expect(driver.name).toBe('nomad');
    await expect(
      driver.start({
        tenantId: 'ten_x',
        sessionId: 'sesn_nomad_image_refused',
        environmentId: 'env_x',
        size: 'small',
        env: {},
        proxyUrl: null,
        baseImage: IMAGE,
      }),
    ).rejects.toThrow(/SANDBOX_NOMAD_BASE_IMAGES is not set/);
    expect(fake.submittedJobs).toEqual([]);
  });
});
