import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { MongoClient } from 'mongodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import type { FileService, ObjectStore } from '@agentfleet/core';
import { BETA, startPlatform, type TestPlatform } from './harness.js';

let t: TestPlatform;
let url: string;
let objects: ObjectStore;
let files: FileService;
/** A small upload cap, so the oversize cases stay small. */
const MAX_FILE_BYTES = 256 * 1024;

beforeAll(async () => {
  t = await startPlatform({
    env: { RATE_LIMIT_PER_MINUTE: '100000', MAX_FILE_BYTES: String(MAX_FILE_BYTES) },
  });
  const p = t.server.platform;
  url = t.url;
  objects = p.objects;
  files = p.files;
});
afterAll(async () => {
  await t?.close();
});

const sdk = (apiKey: string) =>
  new Anthropic({ apiKey, baseURL: url, maxRetries: 0, timeout: 20_000 });
const http = (path: string, key: string, init: RequestInit = {}) => {
  const headers = new Headers(init.headers);
  headers.set('x-api-key', key);
  return fetch(`${url}${path}`, { ...init, headers });
};
const json = async (r: Response) => ({ status: r.status, body: (await r.json()) as any });

/** A request whose path goes out exactly as written (fetch would resolve `..` and `\`). */
function raw(
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; body: any }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, method: 'GET', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: any = text;
        try {
          body = JSON.parse(text);
        } catch {
          /* bytes */
        }
        resolve({ status: res.statusCode!, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

interface Part {
  name: string;
  filename?: string;
  type?: string;
  data: string | Buffer;
}
/** A multipart body written by hand, so file names go out exactly as given. */
function multipart(parts: Part[]): { body: Buffer; contentType: string } {
  const boundary = `----agentfleet${randomBytes(8).toString('hex')}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += '\r\n';
    if (p.type) head += `Content-Type: ${p.type}\r\n`;
    chunks.push(
      Buffer.from(`${head}\r\n`),
      Buffer.isBuffer(p.data) ? p.data : Buffer.from(p.data),
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}
const upload = (key: string, parts: Part[]) => {
  const m = multipart(parts);
  return http('/v1/files', key, {
    method: 'POST',
    body: m.body,
    headers: { 'content-type': m.contentType },
  });
};

async function tenantWithSession(name: string) {
  const tn = await t.newTenant(name);
  const env = await tn.client.beta.environments.create({ name: `${name}-env` });
  const agent = await tn.client.beta.agents.create({
    name: `${name}-agent`,
    model: 'claude-sonnet-4-5',
  });
  const session = await tn.client.beta.sessions.create({ agent: agent.id, environment_id: env.id });
  return { ...tn, sessionId: session.id, files: sdk(tn.apiKey) };
}

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

describe('uploads stream into the object store with the MAX_FILE_BYTES cap', () => {
  /** Half-written objects: the directory store's temp files, or GridFS files no key points at (fleet mode). */
  const tmpFiles = async () => {
    const p = t.server.platform;
    if (p.config.objectStore === 'dir')
      return (await readdir(join(p.config.objectStoreDir, 'tmp')).catch(() => [])).length;
    const mongo = p.store as unknown as {
      connection: { getClient(): MongoClient };
      dbName: string;
    };
    const db = mongo.connection.getClient().db(mongo.dbName);
    const referenced = new Set(
      (await db.collection('objects.keys').find({}).toArray()).map((k) => String(k.fileId)),
    );
    const files = await db
      .collection('objects.files')
      .find({}, { projection: { _id: 1 } })
      .toArray();
    return files.filter((f) => !referenced.has(String(f._id))).length;
  };

  it('a file of exactly the cap is stored; one byte more, or many MiB more, is 400 naming file and stores nothing', async () => {
    const a = await tenantWithSession('files-cap');
    const exact = await json(
      await upload(a.apiKey, [
        { name: 'file', filename: 'exact.bin', data: randomBytes(MAX_FILE_BYTES) },
      ]),
    );
    expect(exact.status).toBe(200);
    expect(exact.body.size_bytes).toBe(MAX_FILE_BYTES);
    const dl = await a.files.beta.files.download(exact.body.id);
    expect(Buffer.from(await dl.arrayBuffer()).length).toBe(MAX_FILE_BYTES);
    for (const size of [MAX_FILE_BYTES + 1, 8 * 1024 * 1024]) {
      const r = await json(
        await upload(a.apiKey, [
          { name: 'file', filename: 'big.bin', data: Buffer.alloc(size, 7) },
        ]),
      );
      expect(r.status, String(size)).toBe(400);
      expect(r.body.error.details, String(size)).toEqual({ field: 'file' });
      expect(r.body.error.message, String(size)).toContain(`${MAX_FILE_BYTES}-byte limit`);
    }
    expect((await objects.list(`files/${a.tenantId}/`)).map((o) => o.size)).toEqual([
      MAX_FILE_BYTES,
    ]);
    expect(await tmpFiles()).toBe(0);
  });

  it('a body cut off in the middle of the file is a 4xx and leaves nothing half-written', async () => {
    const a = await tenantWithSession('files-cut');
    const m = multipart([{ name: 'file', filename: 'cut.bin', data: randomBytes(200_000) }]);
    const cut = m.body.subarray(0, 150_000);
    const r = await json(
      await http('/v1/files', a.apiKey, {
        method: 'POST',
        body: cut,
        headers: { 'content-type': m.contentType },
      }),
    );
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    expect(r.body.error.type).toBe('invalid_request');
    expect(await objects.list(`files/${a.tenantId}/`)).toEqual([]);
    expect(await tmpFiles()).toBe(0);
  });

  it('bytes already streamed are removed when a field after the file is refused', async () => {
    const a = await tenantWithSession('files-late-field');
    for (const [parts, field] of [
      [
        [
          { name: 'file', filename: 'a.bin', data: randomBytes(100_000) },
          { name: 'session_id', data: 'sess_nope' },
        ],
        'session_id',
      ],
      [
        [
          { name: 'file', filename: 'a.bin', data: randomBytes(100_000) },
          { name: 'expires_in_seconds', data: 'soon' },
        ],
        'expires_in_seconds',
      ],
      [
        [
          { name: 'file', filename: 'a.bin', data: randomBytes(100_000) },
          { name: 'file', filename: 'b.bin', data: 'b' },
        ],
        'file',
      ],
    ] as Array<[Part[], string]>) {
      const r = await json(await upload(a.apiKey, parts));
      expect(r.status, field).toBe(400);
      expect(r.body.error.details, field).toEqual({ field });
    }
    expect(await objects.list(`files/${a.tenantId}/`)).toEqual([]);
    expect((await a.files.beta.files.list()).data).toEqual([]);
    expect(await tmpFiles()).toBe(0);
  });
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
