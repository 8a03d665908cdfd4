/**
 * Update semantics through the official TypeScript SDK: metadata patches follow the SDK docs on
 * agents, sessions and environments ("" or null deletes a key, other keys are kept), and an
 * environment update keeps every field it omits (core/src/domain/metadata.ts, environments.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from './harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform();
});
afterAll(async () => {
  await t?.close();
});

describe('metadata patches', () => {
  it('agents: "" and null delete a key, the rest is kept', async () => {
    const c = t.client;
    const a = await c.beta.agents.create({
      name: 'm',
      model: 'claude-sonnet-4-5',
      metadata: { a: '1', b: '2', c: '3' },
    });
    const u = await c.beta.agents.update(a.id, {
      version: a.version,
      metadata: { a: '', b: null, d: '4' },
    });
    expect(u.metadata).toEqual({ c: '3', d: '4' });
    expect((await c.beta.agents.retrieve(a.id)).metadata).toEqual({ c: '3', d: '4' });
  });

  it('sessions: "" and null delete a key, the rest is kept', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 's' });
    const a = await c.beta.agents.create({ name: 's', model: 'claude-sonnet-4-5' });
    const s = await c.beta.sessions.create({
      agent: a.id,
      environment_id: env.id,
      metadata: { a: '1', b: '2', c: '3' },
    });
    const u = await c.beta.sessions.update(s.id, { metadata: { a: '', b: null, d: '4' } });
    expect(u.metadata).toEqual({ c: '3', d: '4' });
    expect((await c.beta.sessions.retrieve(s.id)).metadata).toEqual({ c: '3', d: '4' });
  });

  it('environments: "" and null delete a key, the rest is kept', async () => {
    const c = t.client;
    const e = await c.beta.environments.create({ name: 'e', metadata: { a: '1', b: '2', c: '3' } });
    const u = await c.beta.environments.update(e.id, { metadata: { a: '', b: null, d: '4' } });
    expect(u.metadata).toEqual({ c: '3', d: '4' });
    expect((await c.beta.environments.retrieve(e.id)).metadata).toEqual({ c: '3', d: '4' });
  });
});

describe('environment update keeps omitted fields', () => {
  it('name-only and metadata-only updates leave networking, packages and description alone', async () => {
    const c = t.client;
    const e = await c.beta.environments.create({
      name: 'keep',
      description: 'd',
      config: {
        type: 'cloud',
        networking: {
          type: 'limited',
          allowed_hosts: ['example.com'],
          allow_package_managers: true,
          allow_mcp_servers: true,
        },
        packages: { pip: ['requests'], npm: ['left-pad'] },
      },
    });
    await c.beta.environments.update(e.id, { name: 'renamed' });
    await c.beta.environments.update(e.id, { metadata: { k: 'v' } });
    const got = await c.beta.environments.retrieve(e.id);
    expect(got.name).toBe('renamed');
    expect(got.description).toBe('d');
    expect(got.config).toMatchObject({
      type: 'cloud',
      networking: {
        type: 'limited',
        allowed_hosts: ['example.com'],
        allow_package_managers: true,
        allow_mcp_servers: true,
      },
      packages: { pip: ['requests'], npm: ['left-pad'] },
    });
  });

  it('a partial networking/packages update changes only the fields it names', async () => {
    const c = t.client;
    const e = await c.beta.environments.create({
      name: 'partial',
      config: {
        type: 'cloud',
        networking: { type: 'limited', allowed_hosts: ['a.example'], allow_mcp_servers: true },
        packages: { pip: ['requests'], npm: ['left-pad'] },
      },
    });
    const u = await c.beta.environments.update(e.id, {
      config: {
        type: 'cloud',
        networking: { type: 'limited', allow_package_managers: true },
        packages: { pip: ['httpx'] },
      },
    });
    expect(u.config).toMatchObject({
      networking: {
        type: 'limited',
        allowed_hosts: ['a.example'],
        allow_mcp_servers: true,
        allow_package_managers: true,
      },
      packages: { pip: ['httpx'], npm: ['left-pad'] },
    });
  });
});
