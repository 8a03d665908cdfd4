/**
 * The claimed-session bearer (a Work claim's `sessions_token`) and the spec's capability table,
 * checked on every request against the live claim:
 * - allowed: retrieve the claimed session; list, stream and send its events; metadata and
 *   content of files attached to it; its MCP proxy path; ack, heartbeat and stop of its item;
 * - refused (403 forbidden in the error shape): other sessions, session listing, archive and
 *   delete, file listing, upload, delete and unattached files, agents, skills, GraphQL, other
 *   work routes and other work items; through x-api-key the token is no key at all (401);
 * - once the item is stopped the bearer reaches no session API (401).
 * Proves gateway/src/claimedSession.ts and its call from gateway/src/requestGuards.ts.
 */
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
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

describe('claimed-session bearer capabilities', () => {
  it('allows the claimed session, its events, attached files, its MCP path and its work item', async () => {
    const w = await workEnv(t, 'bearer');
    const attached = await t.client.beta.files.upload({
      file: await toFile(Buffer.from('attached bytes'), 'attached.txt', { type: 'text/plain' }),
    });
    const unattached = await t.client.beta.files.upload({
      file: await toFile(Buffer.from('other bytes'), 'other.txt', { type: 'text/plain' }),
    });
    const session = await t.client.beta.sessions.create({
      agent: w.agentId,
      environment_id: w.envId,
      resources: [{ type: 'file', file_id: attached.id }],
    });
    const otherSession = await newSession(t, w);
    const item = (await w.worker.beta.environments.work.poll(w.envId))!;
    // The oldest item first: the session created first.
    expect(item.data.id).toBe(session.id);
    const token = sessionsToken(item.secret);
    const c = bearerClient(t, token);

    expect((await c.beta.sessions.retrieve(session.id)).id).toBe(session.id);
    const listed = await c.beta.sessions.events.list(session.id, { limit: 1000 });
    expect(Array.isArray(listed.data)).toBe(true);
    await c.beta.sessions.events.send(session.id, { events: [{ type: 'user.interrupt' }] });
    const stream = await withBearer(t, token, `/v1/sessions/${session.id}/events/stream`);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toContain('text/event-stream');
    await stream.body?.cancel();
    expect((await c.beta.files.retrieveMetadata(attached.id)).id).toBe(attached.id);
    const content = await withBearer(t, token, `/v1/files/${attached.id}/content`);
    expect(content.status).toBe(200);
    expect(await content.text()).toBe('attached bytes');

    // The MCP proxy: its own session's path answers as it does for the operator key.
    const own = `/v1/svc/mcp-proxy/${session.id}/nope`;
    const asOperator = await fetch(`${t.url}${own}`, {
      headers: { authorization: `Bearer ${t.operatorKey}` },
    });
    const asBearer = await withBearer(t, token, own);
    expect(asBearer.status).toBe(asOperator.status);
    expect(asBearer.status).not.toBe(403);
    expect((await withBearer(t, token, `/v1/svc/mcp-proxy/${otherSession.id}/nope`)).status).toBe(
      403,
    );

    // Refused: everything outside the table.
    const refused: Array<[string, string, unknown?]> = [
      ['GET', `/v1/sessions/${otherSession.id}`],
      ['GET', `/v1/sessions/${otherSession.id}/events`],
      ['POST', `/v1/sessions/${otherSession.id}/events`, { events: [{ type: 'user.interrupt' }] }],
      ['GET', '/v1/sessions'],
      ['POST', `/v1/sessions/${session.id}/archive`, {}],
      ['DELETE', `/v1/sessions/${session.id}`],
      ['POST', `/v1/sessions/${session.id}`, { title: 'x' }],
      ['GET', '/v1/files'],
      ['DELETE', `/v1/files/${attached.id}`],
      ['GET', `/v1/files/${unattached.id}`],
      ['GET', `/v1/files/${unattached.id}/content`],
      ['GET', '/v1/agents'],
      ['GET', `/v1/agents/${w.agentId}`],
      ['GET', '/v1/skills'],
      ['GET', '/v1/memory_stores'],
      ['POST', '/graphql', { query: '{ __typename }' }],
      ['GET', `/v1/environments/${w.envId}/work/poll`],
      ['GET', `/v1/environments/${w.envId}/work/${item.id}`],
      ['GET', `/v1/environments/${w.envId}/work`],
      ['POST', `/v1/environments/${w.envId}/work/${item.id}`, { metadata: { a: 'b' } }],
    ];
    for (const [method, path, body] of refused) {
      const res = await withBearer(t, token, path, {
        method,
        ...(body !== undefined
          ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }
          : {}),
      });
      const text = await res.text();
      expect(res.status, `${method} ${path}: ${text}`).toBe(403);
      expect(JSON.parse(text)).toMatchObject({ type: 'error', error: { type: 'forbidden' } });
    }
    const upload = await c.beta.files
      .upload({ file: await toFile(Buffer.from('x'), 'x.txt') })
      .catch((e) => e);
    expect(upload).toBeInstanceOf(Anthropic.PermissionDeniedError);

    // Another item's work routes: refused; its own: allowed.
    const otherItem = (await w.worker.beta.environments.work.poll(w.envId))!;
    const foreign = await c.beta.environments.work
      .ack(otherItem.id, { environment_id: w.envId })
      .catch((e) => e);
    expect(foreign).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect((await c.beta.environments.work.ack(item.id, { environment_id: w.envId })).state).toBe(
      'starting',
    );

    // Through x-api-key the token is not a key.
    const asKey = await t.http(`/v1/sessions/${session.id}`, { key: token, headers: BETA });
    expect(asKey.status).toBe(401);

    // The live claim: once the item is stopped, no session API.
    await t.client.beta.environments.work.stop(item.id, { environment_id: w.envId, force: true });
    const after = await c.beta.sessions.retrieve(session.id).catch((e) => e);
    expect(after).toBeInstanceOf(Anthropic.AuthenticationError);
  });
});
