/**
 * The Environment Work API through the official SDK's `client.beta.environments.work` calls
 * (poll, ack, heartbeat, stop, update, list, stats, retrieve), with an environment service key
 * and the claim's sessions token, on a self_hosted environment whose session create enqueued
 * the item. Out-of-range arguments are 400 naming the field. Proves core/src/work/work.ts and
 * gateway/src/routes/work.ts.
 */
import Anthropic from '@anthropic-ai/sdk';
import { BetaHeartbeatPreconditionFailedError } from '@anthropic-ai/sdk/resources/beta/environments/work';
import type { BetaSelfHostedWork } from '@anthropic-ai/sdk/resources/beta/environments/work';
import type { WorkView } from '@agentfleet/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import {
  bearerClient,
  newSession,
  sessionsToken,
  withBearer,
  workEnv,
} from '../../kit/workHelpers.js';

// The served item is the SDK's type (compile-time check).
const asSdk = (w: WorkView): BetaSelfHostedWork => w;
void asSdk;

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const status = async (p: Promise<unknown>) => {
  try {
    await p;
    return 200;
  } catch (e) {
    return (e as { status?: number }).status ?? -1;
  }
};

describe('Work API through the SDK', () => {
  it("the SDK's work calls: poll, ack, heartbeat, update, retrieve, list, stats, stop", async () => {
    const w = await workEnv(t, 'api');
    const session = await newSession(t, w);
    const work = t.client.beta.environments.work;

    const before = await work.stats(w.envId);
    expect(before).toMatchObject({ type: 'work_queue_stats', depth: 1, pending: 0 });
    expect(before.oldest_queued_at).not.toBeNull();

    const item = await w.worker.beta.environments.work.poll(w.envId, {
      block_ms: 999,
      'Anthropic-Worker-ID': 'worker-a',
    });
    expect(item).toMatchObject({
      type: 'work',
      environment_id: w.envId,
      data: { type: 'session', id: session.id },
      state: 'queued',
      metadata: {},
      acknowledged_at: null,
      latest_heartbeat_at: null,
      stopped_at: null,
    });
    expect(item!.id).toMatch(/^work_/);
    const token = sessionsToken(item!.secret);
    expect(await work.stats(w.envId)).toMatchObject({
      depth: 0,
      pending: 1,
      workers_polling: 1,
    });

    const acked = await w.worker.beta.environments.work.ack(item!.id, { environment_id: w.envId });
    expect(acked.state).toBe('starting');
    expect(acked.acknowledged_at).not.toBeNull();
    expect(acked.secret).toBeNull();

    const claimed = bearerClient(t, token).beta.environments.work;
    const hb1 = await claimed.heartbeat(item!.id, {
      environment_id: w.envId,
      expected_last_heartbeat: 'NO_HEARTBEAT',
      desired_ttl_seconds: 30,
    });
    expect(hb1).toMatchObject({
      type: 'work_heartbeat',
      lease_extended: true,
      state: 'active',
      ttl_seconds: 30,
    });
    const hb2 = await claimed.heartbeat(item!.id, {
      environment_id: w.envId,
      expected_last_heartbeat: hb1.last_heartbeat,
    });
    expect(hb2.last_heartbeat).not.toBe(hb1.last_heartbeat);
    expect(hb2.ttl_seconds).toBe(30);

    // A stale expected_last_heartbeat: 412, the SDK's typed error with the server's lease.
    const stale = await claimed
      .heartbeat(item!.id, { environment_id: w.envId, expected_last_heartbeat: hb1.last_heartbeat })
      .catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(BetaHeartbeatPreconditionFailedError);
    const err = stale as BetaHeartbeatPreconditionFailedError;
    expect(err.status).toBe(412);
    expect(err.errorCode).toBe('heartbeat_precondition_failed');
    expect(err.details.current_state).toMatchObject({
      state: 'active',
      last_heartbeat: hb2.last_heartbeat,
      lease_extended: false,
    });

    const updated = await work.update(item!.id, {
      environment_id: w.envId,
      metadata: { rack: 'r1', zone: 'z' },
    });
    expect(updated.metadata).toEqual({ rack: 'r1', zone: 'z' });
    const patched = await work.update(item!.id, {
      environment_id: w.envId,
      metadata: { zone: null },
    });
    expect(patched.metadata).toEqual({ rack: 'r1' });

    const got = await work.retrieve(item!.id, { environment_id: w.envId });
    expect(got).toMatchObject({ id: item!.id, state: 'active', secret: null });
    expect(got.latest_heartbeat_at).toBe(hb2.last_heartbeat);
    const listed = [];
    for await (const x of w.worker.beta.environments.work.list(w.envId)) listed.push(x);
    expect(listed.map((x) => x.id)).toEqual([item!.id]);
    expect(listed[0]!.secret).toBeNull();

    // Graceful stop: stopping, which the worker's next heartbeat sees; then its force stop.
    const stopping = await work.stop(item!.id, { environment_id: w.envId });
    expect(stopping.state).toBe('stopping');
    expect(stopping.stop_requested_at).not.toBeNull();
    const hb3 = await claimed.heartbeat(item!.id, {
      environment_id: w.envId,
      expected_last_heartbeat: 'anything: not compared while stopping',
    });
    expect(hb3.state).toBe('stopping');
    const stopped = await claimed.stop(item!.id, { environment_id: w.envId, force: true });
    expect(stopped.state).toBe('stopped');
    expect(stopped.stopped_at).not.toBeNull();
    const again = await claimed
      .stop(item!.id, { environment_id: w.envId, force: true })
      .catch((e) => e);
    expect(again).toBeInstanceOf(Anthropic.ConflictError);
    const hb4 = await claimed.heartbeat(item!.id, { environment_id: w.envId });
    expect(hb4).toMatchObject({ state: 'stopped', lease_extended: false });

    expect(await w.worker.beta.environments.work.poll(w.envId)).toBeNull();
    expect(await work.stats(w.envId)).toMatchObject({
      depth: 0,
      pending: 0,
      oldest_queued_at: null,
    });
  });

  it('a message to a session whose item stopped enqueues a new item', async () => {
    const w = await workEnv(t, 'requeue');
    const session = await newSession(t, w);
    const first = await w.worker.beta.environments.work.poll(w.envId);
    await t.client.beta.environments.work.stop(first!.id, { environment_id: w.envId, force: true });
    expect(await w.worker.beta.environments.work.poll(w.envId)).toBeNull();
    await t.client.beta.sessions.events.send(session.id, {
      events: [{ type: 'user.message', content: [{ type: 'text', text: 'again' }] }],
    });
    const second = await w.worker.beta.environments.work.poll(w.envId);
    expect(second).toMatchObject({ data: { id: session.id }, state: 'queued' });
    expect(second!.id).not.toBe(first!.id);
  });

  it('session create on a self_hosted environment emits the wake-hint webhook session.status_run_started', async () => {
    const hook = await t.http('/v1/svc/webhook_endpoints', {
      method: 'POST',
      headers: BETA,
      json: { url: 'https://hooks.example.com/wake', event_types: ['session.status_run_started'] },
    });
    expect(hook.status, await hook.clone().text()).toBe(200);
    const w = await workEnv(t, 'wake');
    const session = await newSession(t, w);
    const item = await t.client.beta.environments.work.list(w.envId);
    // The event is recorded before the create answers (webhooks.emit is durable).
    const events = await t.server.platform.collections.webhookEvents.find('tnt_default', {
      type: 'session.status_run_started',
    });
    const bodies = events.map((e) => JSON.parse(e.body) as { data: Record<string, unknown> });
    expect(bodies.map((b) => b.data)).toContainEqual(
      expect.objectContaining({
        id: session.id,
        environment_id: w.envId,
        work_id: item.data[0]!.id,
      }),
    );
  });

  it("a deleted session's item is stopped, not handed out", async () => {
    const w = await workEnv(t, 'deleted');
    const session = await newSession(t, w);
    await t.client.beta.sessions.delete(session.id);
    expect(await w.worker.beta.environments.work.poll(w.envId)).toBeNull();
    const [item] = (await t.client.beta.environments.work.list(w.envId)).data;
    expect(item).toMatchObject({ data: { id: session.id }, state: 'stopped' });
  });

  it('a cloud session enqueues nothing; an unknown item or environment is 404', async () => {
    const w = await workEnv(t, 'cloud');
    const cloud = await t.client.beta.environments.create({ name: 'cloud-env' });
    await t.client.beta.sessions.create({ agent: w.agentId, environment_id: cloud.id });
    expect((await t.client.beta.environments.work.stats(cloud.id)).depth).toBe(0);
    expect(
      await status(
        t.client.beta.environments.work.retrieve('work_nope', { environment_id: w.envId }),
      ),
    ).toBe(404);
    expect(await status(t.client.beta.environments.work.stats('env_nope'))).toBe(404);
  });

  it('out-of-range arguments are 400 naming the field', async () => {
    const w = await workEnv(t, 'bounds');
    await newSession(t, w);
    const item = await w.worker.beta.environments.work.poll(w.envId);
    const cases: Array<[string, string, string, unknown?]> = [
      ['GET', `/v1/environments/${w.envId}/work/poll?block_ms=0`, 'block_ms'],
      ['GET', `/v1/environments/${w.envId}/work/poll?block_ms=1000`, 'block_ms'],
      ['GET', `/v1/environments/${w.envId}/work/poll?block_ms=abc`, 'block_ms'],
      [
        'GET',
        `/v1/environments/${w.envId}/work/poll?reclaim_older_than_ms=-5`,
        'reclaim_older_than_ms',
      ],
      ['GET', `/v1/environments/${w.envId}/work?limit=0`, 'limit'],
      [
        'POST',
        `/v1/environments/${w.envId}/work/${item!.id}/heartbeat?desired_ttl_seconds=0`,
        'desired_ttl_seconds',
      ],
      [
        'POST',
        `/v1/environments/${w.envId}/work/${item!.id}/heartbeat?desired_ttl_seconds=99999`,
        'desired_ttl_seconds',
      ],
      ['POST', `/v1/environments/${w.envId}/work/${item!.id}/stop`, 'force', { force: 'yes' }],
      ['POST', `/v1/environments/${w.envId}/work/${item!.id}/stop`, 'when', { when: 1 }],
      ['POST', `/v1/environments/${w.envId}/work/${item!.id}`, 'metadata', { metadata: 'x' }],
      ['POST', `/v1/environments/${w.envId}/work/${item!.id}`, 'metadata', {}],
      // Values are strings or null (schemathesis found an object stored and served).
      [
        'POST',
        `/v1/environments/${w.envId}/work/${item!.id}`,
        'metadata.',
        { metadata: { '': {} } },
      ],
      [
        'POST',
        `/v1/environments/${w.envId}/work/${item!.id}`,
        'metadata.n',
        { metadata: { n: 1 } },
      ],
      [
        'POST',
        `/v1/environments/${w.envId}/work/${item!.id}`,
        'metadata.long',
        { metadata: { long: 'x'.repeat(513) } },
      ],
    ];
    for (const [method, path, field, body] of cases) {
      const res = await withBearer(t, w.envKey, path, {
        method,
        ...(body !== undefined
          ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
          : {}),
      });
      const text = await res.text();
      expect(res.status, `${method} ${path}: ${text}`).toBe(400);
      const e = JSON.parse(text) as { error: { type: string; message: string } };
      expect(e.error.type).toBe('invalid_request');
      expect(e.error.message, path).toContain(field);
    }
    const res = await t.http(`/v1/environments/${w.envId}/work/poll`, {
      headers: { ...BETA, 'anthropic-worker-id': 'x'.repeat(300) },
    });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('Anthropic-Worker-ID');
  });
});
