import { beforeAll, describe, expect, it } from 'vitest';
import type { FileService, ObjectStore } from '@agentfleet/core';
import { BETA, type TestPlatform } from '../../kit/harness.js';

import { http, json, raw, tenantWithSession, useFilesPlatform } from './filesHelpers.js';

const platform = useFilesPlatform();
let t: TestPlatform;
let url: string;
let objects: ObjectStore;
let files: FileService;
beforeAll(() => {
  ({ t, url, objects, files } = platform());
});

describe('session outputs', () => {
  const put = (tenant: string, session: string, name: string, data: string, contentType?: string) =>
    objects.put(
      `outputs/${tenant}/${session}/${name}`,
      Buffer.from(data),
      contentType ? { contentType } : undefined,
    );

  it('lists and streams durable outputs of the caller’s own session (beta header required)', async () => {
    const a = await tenantWithSession('out-a');
    await put(a.tenantId, a.sessionId, 'report.md', '# Report\n');
    await put(a.tenantId, a.sessionId, 'data.csv', 'x,y\n');
    await put(a.tenantId, a.sessionId, 'chart.png', 'PNG', 'image/png');
    await put(a.tenantId, a.sessionId, 'sub/nested.txt', 'nested');
    await put(a.tenantId, `${a.sessionId}x`, 'neighbour.txt', 'other session');

    const list = await json(
      await http(`/v1/sessions/${a.sessionId}/outputs`, a.apiKey, { headers: BETA }),
    );
    expect(list.status).toBe(200);
    expect(list.body.has_more).toBe(false);
    expect(list.body.data.map((o: any) => o.filename)).toEqual([
      'chart.png',
      'data.csv',
      'report.md',
    ]);
    expect(list.body.data[2]).toMatchObject({
      type: 'session_output',
      filename: 'report.md',
      path: '/mnt/session/outputs/report.md',
      size_bytes: 9,
      mime_type: 'text/markdown',
    });
    expect(list.body.data[0].mime_type).toBe('image/png');

    const one = await http(`/v1/sessions/${a.sessionId}/outputs/report.md`, a.apiKey, {
      headers: BETA,
    });
    expect(one.status).toBe(200);
    expect(await one.text()).toBe('# Report\n');
    expect(one.headers.get('content-type')).toBe('text/markdown');
    expect(one.headers.get('content-disposition')).toContain('filename="report.md"');
    const missing = await json(
      await http(`/v1/sessions/${a.sessionId}/outputs/nope.txt`, a.apiKey, { headers: BETA }),
    );
    expect(missing.status).toBe(404);

    for (const path of [
      `/v1/sessions/${a.sessionId}/outputs`,
      `/v1/sessions/${a.sessionId}/outputs/report.md`,
    ]) {
      const r = await json(await http(path, a.apiKey));
      expect(r.status, path).toBe(400);
      expect(r.body.error.message).toContain('anthropic-beta');
    }
    // A session with no outputs yet.
    const s2 = await a.client.beta.sessions.create({
      agent: (await a.client.beta.agents.list()).data[0]!.id,
      environment_id: (await a.client.beta.environments.list()).data[0]!.id,
    });
    expect(
      (await json(await http(`/v1/sessions/${s2.id}/outputs`, a.apiKey, { headers: BETA }))).body,
    ).toEqual({ data: [], has_more: false });
  });

  it('refuses traversal, encoded slashes, backslashes and nesting with 400 naming filename', async () => {
    const a = await tenantWithSession('out-trav');
    await put(a.tenantId, a.sessionId, 'ok.txt', 'ok');
    await put(a.tenantId, a.sessionId, 'sub/nested.txt', 'nested');
    const headers = { 'x-api-key': a.apiKey, ...BETA };
    const base = `/v1/sessions/${a.sessionId}/outputs`;
    expect((await raw(`${base}/ok.txt`, headers)).body).toBe('ok');
    for (const bad of [
      '..',
      '%2E%2E',
      '.',
      '..%2F..%2Fsecret',
      'a%2Fb',
      'sub%2Fnested.txt',
      'sub%2fnested.txt',
      'a%5Cb',
      'a\\b',
      'sub/nested.txt',
      '../ok.txt',
      'x/../ok.txt',
      '%00',
      `${'n'.repeat(256)}`,
    ]) {
      const r = await raw(`${base}/${bad}`, headers);
      expect(r.status, bad).toBe(400);
      expect(r.body.error, bad).toMatchObject({
        type: 'invalid_request',
        details: { field: 'filename' },
      });
    }
  });

  it("answers 404 for another tenant's session, whatever the filename", async () => {
    const a = await tenantWithSession('out-owner');
    const b = await t.newTenant('out-other');
    await put(a.tenantId, a.sessionId, 'secret.txt', 'secret');
    const headers = { 'x-api-key': b.apiKey, ...BETA };
    for (const path of ['', '/secret.txt', '/sub/nested.txt', '/..']) {
      const r = await raw(`/v1/sessions/${a.sessionId}/outputs${path}`, headers);
      expect(r.status, path).toBe(404);
      expect(r.body.error.type).toBe('not_found');
    }
    // The other tenant's own key space is empty even under the same session id.
    await put(b.tenantId, a.sessionId, 'planted.txt', 'x');
    expect((await raw(`/v1/sessions/${a.sessionId}/outputs`, headers)).status).toBe(404);
    const own = await raw(`/v1/sessions/${a.sessionId}/outputs`, {
      'x-api-key': a.apiKey,
      ...BETA,
    });
    expect(own.body.data.map((o: any) => o.filename)).toEqual(['secret.txt']);
    expect(
      (await raw('/v1/sessions/sess_unknown/outputs', { 'x-api-key': a.apiKey, ...BETA })).status,
    ).toBe(404);
  });
});
