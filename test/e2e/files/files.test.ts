import { beforeAll, describe, expect, it } from 'vitest';
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import type { FileService, ObjectStore } from '@agentfleet/core';
import type { TestPlatform } from '../../kit/harness.js';

import {
  http,
  json,
  multipart,
  raw,
  sdk,
  tenantWithSession,
  upload,
  useFilesPlatform,
  type Part,
} from './filesHelpers.js';

const platform = useFilesPlatform();
let t: TestPlatform;
let url: string;
let objects: ObjectStore;
let files: FileService;
beforeAll(() => {
  ({ t, url, objects, files } = platform());
});

describe('files', () => {
  it('uploads with session_id (SDK multipart), serves metadata, downloads via /content and the spec path, mounts for the sandbox', async () => {
    const a = await tenantWithSession('files-a');
    const bytes = Buffer.from('hello, sandbox\n');
    const meta = await a.files.beta.files.upload({
      file: await toFile(bytes, 'hello.txt', { type: 'text/plain' }),
      session_id: a.sessionId,
    } as Anthropic.Beta.FileUploadParams);
    expect(meta).toMatchObject({
      type: 'file',
      filename: 'hello.txt',
      mime_type: 'text/plain',
      size_bytes: bytes.length,
      downloadable: true,
      expires_at: null,
      scope: { type: 'session', id: a.sessionId },
    });
    expect(meta.id).toMatch(/^file_/);
    expect(Date.parse(meta.created_at)).toBeGreaterThan(0);

    // SDK retrieveMetadata (Accept: application/json) → JSON metadata.
    expect(await a.files.beta.files.retrieveMetadata(meta.id)).toEqual(meta);
    // SDK download (/content) → the bytes.
    const dl = await a.files.beta.files.download(meta.id);
    expect(Buffer.from(await dl.arrayBuffer())).toEqual(bytes);
    expect(dl.headers.get('content-type')).toBe('text/plain');
    expect(dl.headers.get('content-disposition')).toContain('filename="hello.txt"');

    // Spec path GET /v1/files/:id: the bytes unless Accept names application/json.
    const plain = await http(`/v1/files/${meta.id}`, a.apiKey);
    expect(plain.status).toBe(200);
    expect(Buffer.from(await plain.arrayBuffer())).toEqual(bytes);
    expect(plain.headers.get('vary')).toMatch(/accept/i);
    const star = await http(`/v1/files/${meta.id}`, a.apiKey, { headers: { accept: '*/*' } });
    expect(await star.text()).toBe(bytes.toString());
    const binary = await http(`/v1/files/${meta.id}`, a.apiKey, {
      headers: { accept: 'application/octet-stream' },
    });
    expect(await binary.text()).toBe(bytes.toString());
    const refused = await http(`/v1/files/${meta.id}`, a.apiKey, {
      headers: { accept: 'application/json;q=0, */*' },
    });
    expect(await refused.text()).toBe(bytes.toString());
    const asJson = await json(
      await http(`/v1/files/${meta.id}`, a.apiKey, {
        headers: { accept: 'text/html, application/json;q=0.5' },
      }),
    );
    expect(asJson).toEqual({ status: 200, body: meta });

    // The sandbox manager's resources callback.
    const mounted = await files.forSession(a.tenantId, a.sessionId);
    expect(mounted.map((m) => m.path)).toEqual([`/home/user/files/${meta.id}/hello.txt`]);
    expect(Buffer.from(await mounted[0]!.data())).toEqual(bytes);
    expect(await files.forSession(a.tenantId, 'sess_other')).toEqual([]);
  });

  it('uploads without a session; raw multipart; an unnamed part gets a name; mime from the extension', async () => {
    const a = await t.newTenant('files-raw');
    const r = await json(
      await upload(a.apiKey, [
        {
          name: 'file',
          filename: 'data.csv',
          type: 'application/octet-stream',
          data: 'a,b\n1,2\n',
        },
      ]),
    );
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      filename: 'data.csv',
      mime_type: 'text/csv',
      size_bytes: 8,
      scope: null,
    });
    const unnamed = await json(
      await upload(a.apiKey, [
        { name: 'file', filename: '', type: 'application/json', data: '{}' },
      ]),
    );
    expect(unnamed.body).toMatchObject({ filename: 'unnamed.json', mime_type: 'application/json' });
    const bare = await json(await upload(a.apiKey, [{ name: 'file', data: 'x' }]));
    // A part without Content-Type is text/plain (multipart's default).
    expect(bare.body).toMatchObject({
      filename: 'unnamed.txt',
      mime_type: 'text/plain',
      size_bytes: 1,
    });
    const unicode = await json(
      await upload(a.apiKey, [
        { name: 'file', filename: 'résumé v2 (final).txt', type: 'text/plain', data: 'cv' },
      ]),
    );
    expect(unicode.body.filename).toBe('résumé v2 (final).txt');
    const dl = await http(`/v1/files/${unicode.body.id}/content`, a.apiKey);
    expect(dl.headers.get('content-disposition')).toBe(
      `attachment; filename="r_sum_ v2 (final).txt"; filename*=UTF-8''r%C3%A9sum%C3%A9%20v2%20%28final%29.txt`,
    );
    const expiring = await json(
      await upload(a.apiKey, [
        { name: 'expires_in_seconds', data: '3600' },
        { name: 'file', filename: 'e.txt', data: 'e' },
      ]),
    );
    expect(
      Date.parse(expiring.body.expires_at) - Date.parse(expiring.body.created_at),
    ).toBeGreaterThanOrEqual(3_599_000);
  });

  it('lists newest first with cursor pagination (HTTP and SDK auto-pagination), scope_id and ids filters', async () => {
    const a = await tenantWithSession('files-list');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const f = await a.files.beta.files.upload({
        file: await toFile(Buffer.from(`f${i}`), `f${i}.txt`),
        ...(i % 2 === 0 ? { session_id: a.sessionId } : {}),
      } as Anthropic.Beta.FileUploadParams);
      ids.push(f.id);
    }
    const newest = [...ids].reverse();
    const p1 = await json(await http('/v1/files?limit=2', a.apiKey));
    expect(p1.body.data.map((f: any) => f.id)).toEqual(newest.slice(0, 2));
    expect(p1.body).toMatchObject({ has_more: true, first_id: newest[0], last_id: newest[1] });
    const p2 = await json(await http(`/v1/files?limit=2&page=${p1.body.next_page}`, a.apiKey));
    expect(p2.body.data.map((f: any) => f.id)).toEqual(newest.slice(2, 4));
    const back = await json(await http(`/v1/files?limit=2&page=${p2.body.prev_page}`, a.apiKey));
    expect(back.body.data.map((f: any) => f.id)).toEqual(newest.slice(0, 2));
    const p3 = await json(await http(`/v1/files?limit=2&page=${p2.body.next_page}`, a.apiKey));
    expect(p3.body).toMatchObject({ has_more: false, next_page: null });
    expect(p3.body.data.map((f: any) => f.id)).toEqual(newest.slice(4));

    const all: string[] = [];
    for await (const f of a.files.beta.files.list({ limit: 2 })) all.push(f.id);
    expect(all).toEqual(newest);
    const scoped: string[] = [];
    for await (const f of a.files.beta.files.list({ scope_id: a.sessionId })) scoped.push(f.id);
    expect(scoped).toEqual([ids[4], ids[2], ids[0]]);
    const byIds = await a.files.beta.files.list({ ids: [ids[1]!, ids[3]!, 'file_missing'] });
    expect(byIds.data.map((f) => f.id)).toEqual([ids[3], ids[1]]);

    for (const [q, field] of [
      ['limit=0', 'limit'],
      ['limit=x', 'limit'],
      ['page=garbage', 'page'],
      ['bogus=1', 'bogus'],
      [`ids=${ids[0]}&limit=1`, 'ids'],
    ] as const) {
      const r = await json(await http(`/v1/files?${q}`, a.apiKey));
      expect(r.status, q).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request', details: { field } });
    }
  });

  it('deletes (metadata and bytes), then 404 everywhere', async () => {
    const a = await t.newTenant('files-del');
    const c = sdk(a.apiKey);
    const f = await c.beta.files.upload({ file: await toFile(Buffer.from('bye'), 'bye.txt') });
    expect(await objects.get(`files/${a.tenantId}/${f.id}`)).not.toBeNull();
    expect(await c.beta.files.delete(f.id)).toEqual({ id: f.id, type: 'file_deleted' });
    expect(await objects.get(`files/${a.tenantId}/${f.id}`)).toBeNull();
    await expect(c.beta.files.retrieveMetadata(f.id)).rejects.toMatchObject({ status: 404 });
    await expect(c.beta.files.download(f.id)).rejects.toMatchObject({ status: 404 });
    await expect(c.beta.files.delete(f.id)).rejects.toMatchObject({ status: 404 });
    expect((await http(`/v1/files/${f.id}`, a.apiKey)).status).toBe(404);
    expect((await c.beta.files.list()).data).toEqual([]);
  });

  it("answers 404 for another tenant's files and 400 for another tenant's session_id", async () => {
    const a = await tenantWithSession('files-owner');
    const b = await t.newTenant('files-other');
    const f = await a.files.beta.files.upload({
      file: await toFile(Buffer.from('secret'), 's.txt'),
    });
    for (const [method, path, accept] of [
      ['GET', `/v1/files/${f.id}`, 'application/json'],
      ['GET', `/v1/files/${f.id}`, '*/*'],
      ['GET', `/v1/files/${f.id}/content`, '*/*'],
      ['DELETE', `/v1/files/${f.id}`, 'application/json'],
    ] as const) {
      const r = await json(await http(path, b.apiKey, { method, headers: { accept } }));
      expect(r.status, `${method} ${path} ${accept}`).toBe(404);
      expect(r.body.error.type).toBe('not_found');
    }
    expect((await json(await http('/v1/files', b.apiKey))).body.data).toEqual([]);
    const cross = await json(
      await upload(b.apiKey, [
        { name: 'session_id', data: a.sessionId },
        { name: 'file', filename: 'x.txt', data: 'x' },
      ]),
    );
    expect(cross.status).toBe(400);
    expect(cross.body.error.details).toEqual({ field: 'session_id' });
    // Still there for its owner.
    expect((await a.files.beta.files.retrieveMetadata(f.id)).id).toBe(f.id);
  });

  it('refuses bad uploads with 400 naming the field, and stores nothing', async () => {
    const a = await tenantWithSession('files-bad');
    const cases: Array<[string, Part[] | 'json', string]> = [
      ['no file', [{ name: 'session_id', data: a.sessionId }], 'file'],
      ['json body', 'json', 'file'],
      [
        'two files',
        [
          { name: 'file', filename: 'a.txt', data: 'a' },
          { name: 'file', filename: 'b.txt', data: 'b' },
        ],
        'file',
      ],
      [
        'unknown session',
        [
          { name: 'session_id', data: 'sess_nope' },
          { name: 'file', filename: 'a.txt', data: 'a' },
        ],
        'session_id',
      ],
      [
        'empty session',
        [
          { name: 'session_id', data: '' },
          { name: 'file', filename: 'a.txt', data: 'a' },
        ],
        'session_id',
      ],
      [
        'oversize',
        [{ name: 'file', filename: 'big.bin', data: Buffer.alloc(files.maxBytes + 1, 7) }],
        'file',
      ],
      ['traversal', [{ name: 'file', filename: '../../etc/passwd', data: 'x' }], 'filename'],
      ['dot dot', [{ name: 'file', filename: '..', data: 'x' }], 'filename'],
      ['nested', [{ name: 'file', filename: 'a/b.txt', data: 'x' }], 'filename'],
      ['backslash', [{ name: 'file', filename: 'a\\b.txt', data: 'x' }], 'filename'],
      ['control char', [{ name: 'file', filename: 'a\u0001b.txt', data: 'x' }], 'filename'],
      ['long name', [{ name: 'file', filename: `${'n'.repeat(256)}.txt`, data: 'x' }], 'filename'],
      [
        'unknown field',
        [
          { name: 'purpose', data: 'x' },
          { name: 'file', filename: 'a.txt', data: 'a' },
        ],
        'purpose',
      ],
      [
        'bad expiry',
        [
          { name: 'expires_in_seconds', data: '10' },
          { name: 'file', filename: 'a.txt', data: 'a' },
        ],
        'expires_in_seconds',
      ],
    ];
    for (const [label, parts, field] of cases) {
      const res =
        parts === 'json'
          ? await http('/v1/files', a.apiKey, {
              method: 'POST',
              body: JSON.stringify({ file: 'x' }),
              headers: { 'content-type': 'application/json' },
            })
          : await upload(a.apiKey, parts);
      const r = await json(res);
      expect(r.status, label).toBe(400);
      expect(r.body.error.type, label).toBe('invalid_request');
      expect(r.body.error.details, label).toEqual({ field });
      expect(r.body.error.message.startsWith(`${field}:`), label).toBe(true);
    }
    // The SDK gets the same 400.
    await expect(
      a.files.beta.files.upload({
        file: await toFile(Buffer.from('x'), 'x.txt'),
        session_id: 'sess_nope',
      } as Anthropic.Beta.FileUploadParams),
    ).rejects.toMatchObject({ status: 400 });
    expect((await a.files.beta.files.list()).data).toEqual([]);
    expect(await objects.list(`files/${a.tenantId}/`)).toEqual([]);
  });
});
