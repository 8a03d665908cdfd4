/**
 * File-sourced image and document blocks (`source: {type: 'file', file_id}`) reach the model as
 * content, never as our file id, on both protocols (workers/src/turn/fileBlocks.ts): Anthropic gets
 * base64 image/PDF sources and a text source for a text file; OpenAI gets an image_url data URL,
 * a `file` part with the PDF as a data URL and a text part; inside a user.custom_tool_result
 * they are resolved within the tool_result. The event log keeps the file reference, not the
 * bytes. At send time a missing file, another tenant's file, a deleted or an expired one
 * (details.error_code `file_expired`) and a file of the wrong kind are refused with a 400 naming
 * `events[i].content[j].source.file_id`, and nothing is appended
 * (core/src/sessions/inputEvents.ts). A file deleted after it was sent becomes a text note in
 * later requests; the files of one request are bounded by the upload cap (newest kept). url and
 * base64 sources pass through unchanged.
 * Through the official TypeScript SDK against an in-process platform and the scripted model.
 */
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { addModelCard } from '../../kit/turnHelpers.js';

let t: TestPlatform;
let envId: string;
const OAI_CARD = 'file-blocks-oai';
const OAI_WIRE = 'file-blocks-oai-wire';

// A 1x1 transparent PNG, a minimal PDF and a text file.
const PNG = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==',
  'base64',
);
const PDF = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');
const TEXT = 'quarterly numbers: 1, 2, 3\n';
/** The upload cap, and so the bytes of files one model request carries in all. */
const MAX_FILE_BYTES = 64 * 1024;

beforeAll(async () => {
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      RATE_LIMIT_PER_MINUTE: '100000',
      MAX_FILE_BYTES: String(MAX_FILE_BYTES),
    },
  });
  await addModelCard(t, OAI_CARD, { provider: 'openai', model: OAI_WIRE, apiKey: 'sk-openai' });
  envId = (await t.client.beta.environments.create({ name: 'file-blocks' })).id;
});
afterAll(async () => {
  await t?.close();
});

const upload = async (c: Anthropic, data: Buffer, name: string, type: string) =>
  c.beta.files.upload({ file: await toFile(data, name, { type }) });

async function sessionOn(model: string, c: Anthropic = t.client, environmentId = envId) {
  const agent = await c.beta.agents.create({ name: `fb-${model}`, model });
  return (await c.beta.sessions.create({ agent: agent.id, environment_id: environmentId })).id;
}

/** Sends one user.message (or `events`) and waits for the turn it starts to end; answers the model request. */
async function turn(model: string, sessionId: string, content: any[], events?: any[]) {
  const before = t.model.requests.length;
  const sent = await t.client.beta.sessions.events.send(sessionId, {
    events: events ?? [{ type: 'user.message', content }],
  });
  const seq = (sent as any).data[0].seq as number;
  await waitFor(async () => {
    const evs = (await t.client.beta.sessions.events.list(sessionId, { limit: 1000 })).data;
    return evs.some((e: any) => e.type === 'session.status_idle' && e.seq > seq);
  }, 15_000);
  const req = t.model.requests.slice(before).filter((r) => r.model === model);
  expect(req.length).toBeGreaterThan(0);
  return req.at(-1)!.body;
}

async function refusedAt(p: Promise<unknown>, field: string, errorCode: string | null = null) {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Anthropic.BadRequestError);
  const e = err as InstanceType<typeof Anthropic.BadRequestError>;
  expect((e.error as any).error.message).toContain(field);
  expect(e.errorCode).toBe(errorCode);
}

describe('file-sourced blocks reach the model as content', () => {
  it('Anthropic protocol: base64 image and PDF, text document; the log keeps the reference', async () => {
    const c = t.client;
    const img = await upload(c, PNG, 'dot.png', 'image/png');
    const pdf = await upload(c, PDF, 'report.pdf', 'application/pdf');
    const txt = await upload(c, Buffer.from(TEXT), 'numbers.txt', 'text/plain');
    const sid = await sessionOn('claude-sonnet-4-5');
    const content = [
      { type: 'text', text: 'look' },
      { type: 'image', source: { type: 'file', file_id: img.id } },
      { type: 'document', source: { type: 'file', file_id: pdf.id }, title: 'Report' },
      { type: 'document', source: { type: 'file', file_id: txt.id }, context: 'numbers' },
      { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
    ];
    const body = await turn('claude-sonnet-4-5', sid, content);
    expect(body.messages[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'look' },
        {
          type: 'image',
          source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') },
        },
        {
          type: 'document',
          source: { type: 'base64', media_type: 'application/pdf', data: PDF.toString('base64') },
          title: 'Report',
        },
        {
          type: 'document',
          source: { type: 'text', media_type: 'text/plain', data: TEXT },
          context: 'numbers',
        },
        { type: 'image', source: { type: 'url', url: 'https://example.com/a.png' } },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
      ],
    });
    const wire = JSON.stringify(body);
    for (const id of [img.id, pdf.id, txt.id]) expect(wire).not.toContain(id);
    // The log keeps what was sent: the file reference, never the bytes.
    const logged = (await c.beta.sessions.events.list(sid)).data.find(
      (e: any) => e.type === 'user.message',
    ) as any;
    expect(logged.content).toEqual(content);
  });

  it('OpenAI protocol: image_url data URL, file part with the PDF, text part', async () => {
    const c = t.client;
    const img = await upload(c, PNG, 'dot.png', 'image/png');
    const pdf = await upload(c, PDF, 'report.pdf', 'application/pdf');
    const txt = await upload(c, Buffer.from(TEXT), 'numbers.txt', 'text/plain');
    const sid = await sessionOn(OAI_CARD);
    const body = await turn(OAI_WIRE, sid, [
      { type: 'text', text: 'look' },
      { type: 'image', source: { type: 'file', file_id: img.id } },
      { type: 'document', source: { type: 'file', file_id: pdf.id }, title: 'report.pdf' },
      { type: 'document', source: { type: 'file', file_id: txt.id } },
    ]);
    const user = body.messages.find((m: any) => m.role === 'user');
    expect(user.content).toEqual([
      { type: 'text', text: 'look' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG.toString('base64')}` } },
      {
        type: 'file',
        file: {
          filename: 'report.pdf',
          file_data: `data:application/pdf;base64,${PDF.toString('base64')}`,
        },
      },
      { type: 'text', text: TEXT },
    ]);
    const wire = JSON.stringify(body);
    expect(wire).not.toContain('undefined');
    for (const id of [img.id, pdf.id, txt.id]) expect(wire).not.toContain(id);
  });

  it('a custom tool result carrying a file-sourced image: resolved inside the tool_result', async () => {
    const c = t.client;
    const img = await upload(c, PNG, 'chart.png', 'image/png');
    const agent = await c.beta.agents.create({
      name: 'fb-tools',
      model: 'claude-sonnet-4-5',
      tools: [
        {
          type: 'custom',
          name: 'chart',
          description: 'draws a chart',
          input_schema: { type: 'object', properties: {} },
        },
      ],
    });
    const sid = (await c.beta.sessions.create({ agent: agent.id, environment_id: envId })).id;
    t.model.script('claude-sonnet-4-5', { steps: [{ tool_use: { name: 'chart', input: {} } }] });
    await turn('claude-sonnet-4-5', sid, [{ type: 'text', text: 'draw' }]);
    const use = (await c.beta.sessions.events.list(sid)).data.find(
      (e) => e.type === 'agent.custom_tool_use',
    )!;
    const body = await turn(
      'claude-sonnet-4-5',
      sid,
      [],
      [
        {
          type: 'user.custom_tool_result',
          custom_tool_use_id: use.id,
          content: [{ type: 'image', source: { type: 'file', file_id: img.id } }],
        },
      ],
    );
    expect(body.messages.at(-1).content[0]).toEqual({
      type: 'tool_result',
      tool_use_id: use.id,
      content: [
        {
          type: 'image',
          source: { type: 'base64', media_type: 'image/png', data: PNG.toString('base64') },
        },
      ],
      is_error: false,
    });
  });

  it("one request carries at most the upload cap's bytes of files: newest first, older ones noted", async () => {
    const c = t.client;
    const older = await upload(c, Buffer.alloc(40_000, 'a'), 'older.txt', 'text/plain');
    const newer = await upload(c, Buffer.alloc(40_000, 'b'), 'newer.txt', 'text/plain');
    const sid = await sessionOn('claude-sonnet-4-5');
    const body = await turn('claude-sonnet-4-5', sid, [
      { type: 'document', source: { type: 'file', file_id: older.id } },
      { type: 'document', source: { type: 'file', file_id: newer.id } },
    ]);
    expect(body.messages[0].content).toEqual([
      {
        type: 'text',
        text: `[file ${older.id} (older.txt) left out: the files of one request are limited to ${MAX_FILE_BYTES} bytes]`,
      },
      {
        type: 'document',
        source: { type: 'text', media_type: 'text/plain', data: 'b'.repeat(40_000) },
      },
    ]);
  });

  it.each([
    ['anthropic', 'claude-sonnet-4-5', 'claude-sonnet-4-5'],
    ['openai', OAI_CARD, OAI_WIRE],
  ])(
    '%s: a file sent mid-session is resolved in every later request, the text around it kept',
    async (protocol, card, model) => {
      const img = await upload(t.client, PNG, 'mid.png', 'image/png');
      const sid = await sessionOn(card);
      const texts = (body: any): string[] => JSON.stringify(body.messages).match(/turn \d/g) ?? [];
      for (let i = 1; i <= 3; i++) await turn(model, sid, [{ type: 'text', text: `turn ${i}` }]);
      await turn(model, sid, [
        { type: 'text', text: 'turn 4' },
        { type: 'image', source: { type: 'file', file_id: img.id } },
      ]);
      for (let i = 5; i <= 7; i++) {
        const body = await turn(model, sid, [{ type: 'text', text: `turn ${i}` }]);
        expect(texts(body)).toEqual(Array.from({ length: i }, (_, k) => `turn ${k + 1}`));
        const wire = JSON.stringify(body);
        expect(wire).not.toContain(img.id);
        const data = PNG.toString('base64');
        expect(wire).toContain(
          protocol === 'anthropic' ? `"data":"${data}"` : `"url":"data:image/png;base64,${data}"`,
        );
      }
    },
  );

  it('a file deleted after it was sent becomes a text note in later requests', async () => {
    const c = t.client;
    const img = await upload(c, PNG, 'gone.png', 'image/png');
    const sid = await sessionOn('claude-sonnet-4-5');
    const first = await turn('claude-sonnet-4-5', sid, [
      { type: 'image', source: { type: 'file', file_id: img.id } },
    ]);
    expect(first.messages[0].content[0].source.type).toBe('base64');
    await c.beta.files.delete(img.id);
    const second = await turn('claude-sonnet-4-5', sid, [{ type: 'text', text: 'again' }]);
    expect(second.messages[0].content[0]).toEqual({
      type: 'text',
      text: `[file ${img.id} is no longer available (deleted)]`,
    });
  });
});

describe('file-sourced blocks are checked at send time', () => {
  it("a missing file or another tenant's file: 400 naming the block's file_id, nothing appended", async () => {
    const other = await t.newTenant('file-blocks-other');
    const theirs = await upload(other.client, PNG, 'theirs.png', 'image/png');
    const sid = await sessionOn('claude-sonnet-4-5');
    for (const fileId of [theirs.id, 'file_doesnotexist']) {
      await refusedAt(
        t.client.beta.sessions.events.send(sid, {
          events: [
            {
              type: 'user.message',
              content: [
                { type: 'text', text: 'x' },
                { type: 'image', source: { type: 'file', file_id: fileId } },
              ],
            },
          ],
        }),
        'events[0].content[1].source.file_id',
      );
    }
    // The owner can use it in its own session.
    const own = await sessionOn(
      'claude-sonnet-4-5',
      other.client,
      (await other.client.beta.environments.create({ name: 'own' })).id,
    );
    await other.client.beta.sessions.events.send(own, {
      events: [
        {
          type: 'user.message',
          content: [{ type: 'image', source: { type: 'file', file_id: theirs.id } }],
        },
      ],
    });
    expect((await t.client.beta.sessions.events.list(sid)).data).toEqual([]);
  });

  it('a deleted file, an expired file (error_code file_expired) and the wrong kind: 400', async () => {
    const tn = await t.newTenant('file-blocks-expiry');
    const c = tn.client;
    const env = await c.beta.environments.create({ name: 'expiry' });
    const sid = await sessionOn('claude-sonnet-4-5', c, env.id);
    const send = (block: any, after = false) =>
      c.beta.sessions.events.send(sid, {
        events: [
          ...(after
            ? [{ type: 'user.message' as const, content: [{ type: 'text', text: 'a' }] }]
            : []),
          { type: 'user.message', content: [block] },
        ] as any,
      });
    const deleted = await upload(c, PNG, 'deleted.png', 'image/png');
    await c.beta.files.delete(deleted.id);
    await refusedAt(
      send({ type: 'image', source: { type: 'file', file_id: deleted.id } }),
      'events[0].content[0].source.file_id',
    );
    // The shortest expiry the API takes is an hour: the stored expiry is moved into the past.
    const expiring = await upload(c, PDF, 'old.pdf', 'application/pdf');
    await t.server.platform.collections.files.updateOne(
      tn.tenantId,
      { _id: expiring.id },
      { $set: { expires_at: new Date(Date.now() - 1000).toISOString() } },
    );
    await refusedAt(
      send({ type: 'document', source: { type: 'file', file_id: expiring.id } }, true),
      'events[1].content[0].source.file_id',
      'file_expired',
    );
    const text = await upload(c, Buffer.from('not an image'), 'note.txt', 'text/plain');
    await refusedAt(
      send({ type: 'image', source: { type: 'file', file_id: text.id } }),
      'events[0].content[0].source.file_id',
    );
    const zip = await upload(c, Buffer.from('PK'), 'a.zip', 'application/zip');
    await refusedAt(
      send({ type: 'document', source: { type: 'file', file_id: zip.id } }),
      'events[0].content[0].source.file_id',
    );
    expect((await c.beta.sessions.events.list(sid)).data).toEqual([]);
  });
});
