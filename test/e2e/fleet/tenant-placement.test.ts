import { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, REAL, realAdapterEnv, startPlatform, type TestPlatform } from '../../kit/harness.js';

/** Per-tenant databases and STORE_BACKENDS placement, through a whole platform on MongoDB. */
describe.skipIf(!REAL)('tenant placement on MongoDB', () => {
  const ns = `pl${Math.random().toString(36).slice(2, 8)}`;
  let t: TestPlatform;
  let mongo: MongoClient;
  let euUrl: string;
  beforeAll(async () => {
    const base = realAdapterEnv(ns);
    // A second backend: the same server, another database (routing is what is under test).
    const u = new URL(base.MONGODB_URL!.replace(/^mongodb:/, 'http:'));
    u.pathname = `/${ns}eu`;
    euUrl = u.toString().replace(/^http:/, 'mongodb:');
    t = await startPlatform({
      env: {
        ...base,
        PER_TENANT_DB_ENABLED: 'true',
        STORE_BACKENDS: JSON.stringify({ backends: { eu: euUrl }, tenants: {} }),
      },
    });
    mongo = new MongoClient(base.MONGODB_URL!);
    await mongo.connect();
  });
  afterAll(async () => {
    await mongo?.close();
    await t?.close();
  });

  it('keeps each tenant in its own database; tenants and keys stay in the control database', async () => {
    const a = await t.newTenant('alpha');
    const b = await t.newTenant('beta');
    const agentA = await a.client.beta.agents.create({ name: 'in-a', model: 'claude-sonnet-4-5' });
    const agentB = await b.client.beta.agents.create({ name: 'in-b', model: 'claude-sonnet-4-5' });
    const dbA = mongo.db(`${ns}_${a.tenantId}`);
    const dbB = mongo.db(`${ns}_${b.tenantId}`);
    expect((await dbA.collection('agents').find({}).toArray()).map((d) => d._id)).toEqual([
      agentA.id,
    ]);
    expect((await dbB.collection('agents').find({}).toArray()).map((d) => d._id)).toEqual([
      agentB.id,
    ]);
    const control = mongo.db(ns);
    expect(await control.collection('agents').countDocuments()).toBe(0);
    expect(
      await control
        .collection('tenants')
        .countDocuments({ _id: { $in: [a.tenantId, b.tenantId] } as any }),
    ).toBe(2);
    expect(await control.collection('api_keys').countDocuments({ tenant_id: a.tenantId })).toBe(1);
    // Isolation still answers 404 across tenants, and turns run in the tenant's database.
    await expect(b.client.beta.agents.retrieve(agentA.id)).rejects.toMatchObject({ status: 404 });
    const env = await a.client.beta.environments.create({ name: 'e' });
    const s = await a.client.beta.sessions.create({ agent: agentA.id, environment_id: env.id });
    await a.client.beta.sessions.events.send(s.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'hi' }] }],
    });
    for (
      let i = 0;
      i < 200 &&
      (await dbA
        .collection('events')
        .countDocuments({ session_id: s.id, type: 'session.status_idle' })) === 0;
      i++
    )
      await new Promise((r) => setTimeout(r, 50));
    expect(
      await dbA
        .collection('events')
        .countDocuments({ session_id: s.id, type: 'session.status_idle' }),
    ).toBe(1);
    expect(await control.collection('events').countDocuments({ session_id: s.id })).toBe(0);
  });

  it('places a tenant listed in STORE_BACKENDS on its backend', async () => {
    // A platform whose placement names a tenant created through the first one.
    const c = await t.newTenant('gamma');
    const placed = await startPlatform({
      env: {
        ...realAdapterEnv(ns),
        API_KEY: t.operatorKey,
        PER_TENANT_DB_ENABLED: 'true',
        STORE_BACKENDS: JSON.stringify({
          backends: { eu: euUrl },
          tenants: { [c.tenantId]: 'eu' },
        }),
      },
    });
    try {
      const agent = await placed
        .clientFor(c.apiKey)
        .beta.agents.create({ name: 'in-eu', model: 'claude-sonnet-4-5' });
      expect(
        await mongo
          .db(`${ns}eu_${c.tenantId}`)
          .collection('agents')
          .countDocuments({ _id: agent.id as any }),
      ).toBe(1);
      expect(
        await mongo
          .db(`${ns}_${c.tenantId}`)
          .collection('agents')
          .countDocuments({ _id: agent.id as any }),
      ).toBe(0);
      const r = await placed.http('/v1/svc/model_cards', { key: c.apiKey, headers: BETA });
      expect(r.status).toBe(200);
    } finally {
      await placed.close();
    }
  });
});
