/**
 * DELETE /v1/sessions/:id cascades (spec retention table; core/src/sessions/cascade.ts):
 * the session's scoped files are no longer listed or downloadable and their bytes are gone, its
 * output prefix is emptied, other files stay. A second delete does not 5xx (404: the session is
 * gone). Through the official TypeScript SDK and plain HTTP.
 */
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { outputObjectKey, outputsPrefix } from '@agentfleet/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform();
});
afterAll(async () => {
  await t?.close();
});

describe('session delete cascade', () => {
  it('removes session files and outputs; unscoped files stay', async () => {
    const { tenantId, apiKey, client: c } = await t.newTenant('cascade');
    const objects = t.server.platform.objects;
    const env = await c.beta.environments.create({ name: 'cascade' });
    const a = await c.beta.agents.create({ name: 'cascade', model: 'claude-sonnet-4-5' });
    const s = await c.beta.sessions.create({ agent: a.id, environment_id: env.id });
    const scoped = await c.beta.files.upload({
      file: await toFile(Buffer.from('scoped'), 'scoped.txt', { type: 'text/plain' }),
      session_id: s.id,
    } as Anthropic.Beta.FileUploadParams);
    const kept = await c.beta.files.upload({
      file: await toFile(Buffer.from('kept'), 'kept.txt', { type: 'text/plain' }),
    });
    // An output as the sandbox sync writes it.
    await objects.put(outputObjectKey(tenantId, s.id, 'out.txt'), Buffer.from('out'));
    const outputs = await t.http(`/v1/sessions/${s.id}/outputs`, { key: apiKey, headers: BETA });
    expect(outputs.status).toBe(200);
    expect(JSON.stringify(await outputs.json())).toContain('out.txt');
    const fileKeys = (await t.server.platform.collections.files.find(tenantId, {})).map(
      (f) => f.object_key,
    );
    expect(fileKeys.length).toBe(2);

    expect(await c.beta.sessions.delete(s.id)).toMatchObject({ id: s.id, type: 'session_deleted' });

    const listed: string[] = [];
    for await (const f of c.beta.files.list()) listed.push(f.id);
    expect(listed).toEqual([kept.id]);
    const err = await c.beta.files.download(scoped.id).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect(Buffer.from(await (await c.beta.files.download(kept.id)).arrayBuffer()).toString()).toBe(
      'kept',
    );
    expect(await objects.list(outputsPrefix(tenantId, s.id))).toEqual([]);
    const remaining = await Promise.all(fileKeys.map(async (k) => !!(await objects.get(k))));
    expect(remaining.filter(Boolean).length).toBe(1);
    expect(
      (await t.http(`/v1/sessions/${s.id}/outputs/out.txt`, { key: apiKey, headers: BETA })).status,
    ).toBe(404);

    // Idempotent: a second delete answers 404 (the session is gone), never a 5xx.
    const again = await t.http(`/v1/sessions/${s.id}`, { method: 'DELETE', key: apiKey });
    expect(again.status).toBe(404);
  });
});
