/**
 * Reclaim and the claim-bound sessions token (spec "Work item lifecycle" 3, 4, 6):
 * - a polled, unacknowledged item is reclaimable after `reclaim_older_than_ms`; the reclaim
 *   rotates the sessions token and the old one is refused at once (401 on the session, 412 —
 *   the SDK's BetaHeartbeatPreconditionFailedError — on heartbeat, 409 on stop);
 * - an acknowledged item is not reclaimable while its heartbeat lease lives, and is once the
 *   lease (coordination leases: Redis in fleet mode) has expired;
 * - an expired current bearer may still heartbeat and stop but cannot append events (the work
 *   clock is moved forward through the platform's injectable `work.now`).
 * Proves core/src/work/work.ts and core/src/work/tokens.ts.
 */
import Anthropic from '@anthropic-ai/sdk';
import { BetaHeartbeatPreconditionFailedError } from '@anthropic-ai/sdk/resources/beta/environments/work';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import {
  bearerClient,
  newSession,
  sessionsToken,
  withBearer,
  workEnv,
} from '../../kit/workHelpers.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
}, 60_000);
afterAll(async () => {
  await t?.close();
});

describe('Work reclaim', () => {
  it('reclaim rotates the sessions token: the old token is refused at once', async () => {
    const w = await workEnv(t, 'reclaim');
    const session = await newSession(t, w);
    const poll = w.worker.beta.environments.work;
    const first = await poll.poll(w.envId, { reclaim_older_than_ms: 60_000 });
    const oldToken = sessionsToken(first!.secret);
    // Within the reclaim window nobody else gets it.
    expect(await poll.poll(w.envId, { reclaim_older_than_ms: 60_000 })).toBeNull();
    const old = bearerClient(t, oldToken);
    expect((await old.beta.sessions.retrieve(session.id)).id).toBe(session.id);

    const second = await waitFor(() => poll.poll(w.envId, { reclaim_older_than_ms: 1 }));
    expect(second.id).toBe(first!.id);
    const newToken = sessionsToken(second.secret);
    expect(newToken).not.toBe(oldToken);

    const refused = await old.beta.sessions.retrieve(session.id).catch((e) => e);
    expect(refused).toBeInstanceOf(Anthropic.AuthenticationError);
    const send = await withBearer(t, oldToken, `/v1/sessions/${session.id}/events`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ events: [{ type: 'user.interrupt' }] }),
    });
    expect(send.status).toBe(401);
    const hb = await old.beta.environments.work
      .heartbeat(first!.id, { environment_id: w.envId, expected_last_heartbeat: 'NO_HEARTBEAT' })
      .catch((e) => e);
    expect(hb).toBeInstanceOf(BetaHeartbeatPreconditionFailedError);
    expect((hb as BetaHeartbeatPreconditionFailedError).details.current_state.state).toBe('queued');
    const stop = await old.beta.environments.work
      .stop(first!.id, { environment_id: w.envId, force: true })
      .catch((e) => e);
    expect(stop).toBeInstanceOf(Anthropic.ConflictError);

    const current = bearerClient(t, newToken);
    expect((await current.beta.sessions.retrieve(session.id)).id).toBe(session.id);
    const acked = await current.beta.environments.work.ack(second.id, { environment_id: w.envId });
    expect(acked.state).toBe('starting');
  });

  it('an acknowledged item is reclaimable only once its heartbeat lease expired', async () => {
    const w = await workEnv(t, 'lease');
    await newSession(t, w);
    const poll = w.worker.beta.environments.work;
    const item = await poll.poll(w.envId);
    const owner = bearerClient(t, sessionsToken(item!.secret)).beta.environments.work;
    await owner.ack(item!.id, { environment_id: w.envId });
    const hb = await owner.heartbeat(item!.id, {
      environment_id: w.envId,
      expected_last_heartbeat: 'NO_HEARTBEAT',
      desired_ttl_seconds: 60,
    });
    // Acknowledged and leased: reclaim_older_than_ms does not apply.
    expect(await poll.poll(w.envId, { reclaim_older_than_ms: 1 })).toBeNull();
    // The owner shortens its lease to 1 s and stops heartbeating: then it is reclaimed.
    await owner.heartbeat(item!.id, {
      environment_id: w.envId,
      expected_last_heartbeat: hb.last_heartbeat,
      desired_ttl_seconds: 1,
    });
    const again = await waitFor(
      () => poll.poll(w.envId, { reclaim_older_than_ms: 1 }),
      15_000,
      200,
    );
    expect(again.id).toBe(item!.id);
    expect(again).toMatchObject({
      state: 'queued',
      acknowledged_at: null,
      latest_heartbeat_at: null,
    });
    // The replaced owner's heartbeat: 412, so its worker aborts without stopping the item.
    const late = await owner
      .heartbeat(item!.id, { environment_id: w.envId, expected_last_heartbeat: hb.last_heartbeat })
      .catch((e) => e);
    expect(late).toBeInstanceOf(BetaHeartbeatPreconditionFailedError);
    // The new owner starts from NO_HEARTBEAT.
    const next = bearerClient(t, sessionsToken(again.secret)).beta.environments.work;
    await next.ack(again.id, { environment_id: w.envId });
    const first = await next.heartbeat(again.id, {
      environment_id: w.envId,
      expected_last_heartbeat: 'NO_HEARTBEAT',
    });
    expect(first).toMatchObject({ state: 'active', lease_extended: true });
  });

  it('an expired current bearer may heartbeat and stop but cannot append events', async () => {
    const w = await workEnv(t, 'expiry');
    const session = await newSession(t, w);
    const item = await w.worker.beta.environments.work.poll(w.envId);
    const token = sessionsToken(item!.secret);
    const work = t.server.platform.work;
    const send = () =>
      withBearer(t, token, `/v1/sessions/${session.id}/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        // Invalid on purpose: a 400 means the bearer passed, a 401 that it was refused.
        body: JSON.stringify({ events: [] }),
      });
    expect((await send()).status).toBe(400);
    try {
      work.now = () => Date.now() + 3_600_000;
      expect((await send()).status).toBe(401);
      const read = await withBearer(t, token, `/v1/sessions/${session.id}`);
      expect(read.status).toBe(401);
      // Heartbeat (which acknowledges a polled item) is still allowed, and renews the token.
      const hb = await bearerClient(t, token).beta.environments.work.heartbeat(item!.id, {
        environment_id: w.envId,
        expected_last_heartbeat: 'NO_HEARTBEAT',
        desired_ttl_seconds: 30,
      });
      expect(hb).toMatchObject({ state: 'active', lease_extended: true });
      expect((await send()).status).toBe(400);
      // Expired again: stop still works.
      work.now = () => Date.now() + 7_200_000;
      expect((await send()).status).toBe(401);
      const stopped = await bearerClient(t, token).beta.environments.work.stop(item!.id, {
        environment_id: w.envId,
        force: true,
      });
      expect(stopped.state).toBe('stopped');
    } finally {
      work.now = Date.now;
    }
    // A stopped item's bearer reaches no session API.
    expect((await withBearer(t, token, `/v1/sessions/${session.id}`)).status).toBe(401);
  });
});
