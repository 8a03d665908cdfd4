/**
 * Update semantics through the official TypeScript SDK: metadata patches follow the SDK docs on
 * agents, sessions and environments ("" or null deletes a key, other keys are kept), and an
 * environment update keeps every field it omits (core/src/api/metadata.ts, environments.ts).
 * A session update that changes something appends `session.updated` (SDK shape: only the changed
 * keys), served by events list and the live stream; a no-op update appends nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

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
        // packages under limited networking need allow_package_managers (SDK rule)
        networking: {
          type: 'limited',
          allowed_hosts: ['a.example'],
          allow_mcp_servers: true,
          allow_package_managers: true,
        },
        packages: { pip: ['requests'], npm: ['left-pad'] },
      },
    });
    const u = await c.beta.environments.update(e.id, {
      config: {
        type: 'cloud',
        networking: { type: 'limited', allow_mcp_servers: false },
        packages: { pip: ['httpx'] },
      },
    });
    expect(u.config).toMatchObject({
      networking: {
        type: 'limited',
        allowed_hosts: ['a.example'],
        allow_mcp_servers: false,
        allow_package_managers: true,
      },
      packages: { pip: ['httpx'], npm: ['left-pad'] },
    });
  });
});

describe('session.updated', () => {
  it('is appended with only the changed keys, listed and streamed; a no-op appends nothing', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'u' });
    const a = await c.beta.agents.create({ name: 'u', model: 'claude-sonnet-4-5' });
    const s = await c.beta.sessions.create({
      agent: a.id,
      environment_id: env.id,
      title: 'one',
      metadata: { k: 'v' },
    });
    const stream = await c.beta.sessions.events.stream(s.id);
    await c.beta.sessions.update(s.id, { title: 'two' });
    await c.beta.sessions.update(s.id, { title: 'two' }); // no change: no event
    await c.beta.sessions.update(s.id, { metadata: { k: '', n: '1' } });
    await c.beta.sessions.update(s.id, { metadata: { n: null } }); // cleared to empty
    const streamed: any[] = [];
    for await (const e of stream) {
      if (e.type !== 'session.updated') continue;
      streamed.push(e);
      if (streamed.length === 3) break;
    }
    const listed = (await c.beta.sessions.events.list(s.id)).data.filter(
      (e) => e.type === 'session.updated',
    ) as any[];
    expect(listed.length).toBe(3);
    expect(listed.map((e) => e.id)).toEqual(streamed.map((e) => e.id));
    expect(listed[0]).toMatchObject({ type: 'session.updated', title: 'two' });
    expect(listed[0].metadata).toBeUndefined();
    expect(listed[1]).toMatchObject({ metadata: { n: '1' } });
    expect(listed[1].title).toBeUndefined();
    // Cleared to empty: metadata absent (SDK), nothing else changed.
    expect(listed[2].metadata).toBeUndefined();
    expect(listed[2].title).toBeUndefined();
    expect(typeof listed[2].processed_at).toBe('string');
  });
});
