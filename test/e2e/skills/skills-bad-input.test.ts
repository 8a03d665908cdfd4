/**
 * Skills: every bad upload is a 400 (or 413 for a multipart body over the part limits) in the
 * error shape naming the problem, and leaves nothing behind (no skill, no version); another
 * tenant's skill is a 404 on every route.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { strToU8, zipSync } from 'fflate';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { createJson, expectError, form, skillMd, uniqueName } from './skillsHelpers.js';

let t: TestPlatform;
let key: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', RATE_LIMIT_PER_MINUTE: '100000' } });
  key = (await t.newTenant('skills-bad')).apiKey;
});
afterAll(() => t?.close());

const get = (path: string, k = key) => t.http(path, { key: k });
const post = (path: string, body: FormData, k = key) =>
  t.http(path, { method: 'POST', key: k, body });
const customSkills = async () =>
  ((await (await get('/v1/skills?source=custom&limit=100')).json()) as { data: unknown[] }).data;
const md = (name = uniqueName('ok')) => ({ filename: 'SKILL.md', content: skillMd(name) });

/** Sets the uncompressed size of `entry` in its local and central headers (a lying zip). */
function lieAboutSize(zip: Uint8Array, entry: string, size: number): Uint8Array {
  const out = zip.slice();
  const view = new DataView(out.buffer);
  const name = strToU8(entry);
  const nameAt = (at: number) => name.every((b, i) => out[at + i] === b);
  for (let i = 0; i + 46 < out.length; i++) {
    const sig = view.getUint32(i, true);
    if (sig === 0x04034b50 && view.getUint16(i + 26, true) === name.length && nameAt(i + 30))
      view.setUint32(i + 22, size, true);
    if (sig === 0x02014b50 && view.getUint16(i + 28, true) === name.length && nameAt(i + 46))
      view.setUint32(i + 24, size, true);
  }
  return out;
}
const zipUpload = (zip: Uint8Array) =>
  post('/v1/skills/upload', form({}, [{ field: 'file', filename: 'x.zip', content: zip }]));

describe('bad skill uploads', () => {
  it('each is a 400 naming the problem, and nothing is half-written', async () => {
    const before = (await customSkills()).length;
    const cases: Array<[string, () => Promise<Response>, RegExp]> = [
      [
        'no SKILL.md',
        () => createJson(t, key, [{ filename: 'a.txt', content: 'x' }]),
        /SKILL\.md is missing/,
      ],
      ['no files', () => createJson(t, key, []), /at least one file/],
      [
        'no frontmatter',
        () => createJson(t, key, [{ filename: 'SKILL.md', content: '# hi\n' }]),
        /SKILL\.md: must start with YAML frontmatter/,
      ],
      [
        'bad YAML',
        () =>
          createJson(t, key, [{ filename: 'SKILL.md', content: '---\nname: [unclosed\n---\n' }]),
        /frontmatter is not valid YAML/,
      ],
      [
        'missing name',
        () => createJson(t, key, [{ filename: 'SKILL.md', content: '---\ndescription: d\n---\n' }]),
        /name is required/,
      ],
      [
        'missing description',
        () => createJson(t, key, [{ filename: 'SKILL.md', content: '---\nname: no-desc\n---\n' }]),
        /description is required/,
      ],
      [
        'name not kebab-case',
        () => createJson(t, key, [{ filename: 'SKILL.md', content: skillMd('Bad Name') }]),
        /kebab-case/,
      ],
      [
        'traversal ../x',
        () => createJson(t, key, [md(), { filename: '../x', content: 'x' }]),
        /"\.\." segment \(path traversal\)/,
      ],
      [
        'absolute /etc/x',
        () => createJson(t, key, [md(), { filename: '/etc/x', content: 'x' }]),
        /is absolute/,
      ],
      [
        'backslash a\\b',
        () => createJson(t, key, [md(), { filename: 'a\\b', content: 'x' }]),
        /backslash/,
      ],
      [
        'NUL',
        () => createJson(t, key, [md(), { filename: 'a\u0000b', content: 'x' }]),
        /control character/,
      ],
      [
        'file and dir',
        () =>
          createJson(t, key, [
            md(),
            { filename: 'a', content: 'x' },
            { filename: 'a/b', content: 'y' },
          ]),
        /both a file and a directory/,
      ],
      [
        'two top-level dirs',
        () =>
          createJson(t, key, [
            { filename: 'one/SKILL.md', content: skillMd('two-dirs') },
            { filename: 'two/x', content: 'x' },
          ]),
        /SKILL\.md is missing/,
      ],
      [
        'too many files',
        () =>
          createJson(t, key, [
            md(),
            ...Array.from({ length: 200 }, (_, i) => ({ filename: `f${i}`, content: 'x' })),
          ]),
        /more than 200 files \(limit 200\)/,
      ],
      [
        'too many bytes',
        () => createJson(t, key, [md(), { filename: 'big', content: 'x'.repeat(8 * 1024 * 1024) }]),
        /more than 8388608 bytes/,
      ],
      [
        'bad base64',
        () => createJson(t, key, [md(), { filename: 'b', content: '!!', encoding: 'base64' }]),
        /files\[1\]\.content: is not valid base64/,
      ],
      [
        'unknown field',
        () => createJson(t, key, [md()], { colour: 'red' }),
        /colour: is not a known field/,
      ],
      [
        'multipart: unknown field',
        () =>
          post(
            '/v1/skills',
            form({ colour: 'red' }, [
              { field: 'files[]', filename: 'SKILL.md', content: skillMd('mp') },
            ]),
          ),
        /colour: is not a known field/,
      ],
      [
        'multipart: over the byte limit',
        () =>
          post(
            '/v1/skills',
            form({}, [
              { field: 'files[]', filename: 's/SKILL.md', content: skillMd('mp-big') },
              { field: 'files[]', filename: 's/big', content: new Uint8Array(8 * 1024 * 1024) },
            ]),
          ),
        /exceeds the 8388608-byte limit/,
      ],
      ['zip: not a zip', () => zipUpload(strToU8('not a zip at all')), /file: is not a valid zip/],
      [
        'zip: traversal',
        () => zipUpload(zipSync({ 'SKILL.md': strToU8(skillMd('zt')), '../evil': strToU8('x') })),
        /"\.\." segment/,
      ],
      [
        'zip: no SKILL.md',
        () => zipUpload(zipSync({ 'readme.txt': strToU8('x') })),
        /SKILL\.md is missing/,
      ],
      [
        'zip: too many entries',
        () =>
          zipUpload(
            zipSync(
              Object.fromEntries([
                ['SKILL.md', strToU8(skillMd('many'))],
                ...Array.from({ length: 201 }, (_, i) => [`f${i}`, strToU8('x')]),
              ]),
            ),
          ),
        /more than 200 entries/,
      ],
      [
        'zip bomb (declared)',
        () =>
          zipUpload(
            zipSync({
              'SKILL.md': strToU8(skillMd('bomb-a')),
              'big.bin': [new Uint8Array(9 * 1024 * 1024), { level: 9 }],
            }),
          ),
        /declares more than 8388608 uncompressed bytes/,
      ],
      [
        'zip bomb (lying sizes)',
        () =>
          zipUpload(
            lieAboutSize(
              zipSync({
                'SKILL.md': strToU8(skillMd('bomb-b')),
                'big.bin': [new Uint8Array(9 * 1024 * 1024), { level: 9 }],
              }),
              'big.bin',
              1000,
            ),
          ),
        /zip bomb/,
      ],
    ];
    for (const [what, send, re] of cases) {
      const res = await send();
      await expectError(res, 400, re).catch((e: Error) => {
        throw new Error(`${what}: ${e.message}`);
      });
    }
    expect((await customSkills()).length).toBe(before);
  });

  it('names: duplicate, built-in, and a new version that renames are refused; versions stay', async () => {
    const name = uniqueName('dup');
    const first = (await (await createJson(t, key, [md(name)])).json()) as {
      id: string;
      latest_version: string;
    };
    await expectError(await createJson(t, key, [md(name)]), 400, /already exists.*mount folder/);
    await expectError(await createJson(t, key, [md('xlsx')]), 400, /name of a built-in skill/);
    const renamed = await t.http(`/v1/skills/${first.id}/versions`, {
      method: 'POST',
      key,
      json: { files: [md(uniqueName('other'))] },
    });
    await expectError(renamed, 400, /differs from the skill's name/);
    const versions = (await (await get(`/v1/skills/${first.id}/versions`)).json()) as {
      data: unknown[];
    };
    expect(versions.data).toHaveLength(1);
    // Built-ins take no new versions.
    await expectError(
      await t.http('/v1/skills/pdf/versions', {
        method: 'POST',
        key,
        json: { files: [md('pdf')] },
      }),
      400,
      /built-in/,
    );
  });
});

describe('tenancy', () => {
  it("another tenant's skill is a 404 on every route, and unseen in its list", async () => {
    const name = uniqueName('private');
    const mine = (await (
      await createJson(t, key, [md(name), { filename: 'a/b.txt', content: 'secret' }])
    ).json()) as {
      id: string;
      latest_version: string;
    };
    const other = (await t.newTenant('skills-other')).apiKey;
    const id = mine.id;
    const v = mine.latest_version;
    const attempts: Array<[string, string, unknown?]> = [
      ['GET', `/v1/skills/${id}`],
      ['DELETE', `/v1/skills/${id}`],
      ['GET', `/v1/skills/${id}/versions`],
      ['POST', `/v1/skills/${id}/versions`, { files: [md(name)] }],
      ['GET', `/v1/skills/${id}/versions/${v}`],
      ['DELETE', `/v1/skills/${id}/versions/${v}`],
      ['GET', `/v1/skills/${id}/versions/${v}/content`],
      ['GET', `/v1/skills/${id}/files/SKILL.md`],
      ['GET', `/v1/skills/${id}/files/a/b.txt`],
      ['POST', '/v1/skills', { id, files: [md(name)] }],
    ];
    for (const [method, path, json] of attempts) {
      const res = await t.http(path, { method, key: other, json });
      const text = await res.text();
      expect(res.status, `${method} ${path}: ${text}`).toBe(404);
      expect(text).not.toContain('secret');
    }
    const list = (await (await get('/v1/skills?limit=100', other)).json()) as {
      data: Array<{ id: string }>;
    };
    expect(list.data.map((s) => s.id)).not.toContain(id);
    // The other tenant may use the same name: names are unique per tenant.
    expect((await createJson(t, other, [md(name)])).status).toBe(200);
    // Untouched for its owner.
    expect(
      ((await (await get(`/v1/skills/${id}/versions`)).json()) as { data: unknown[] }).data,
    ).toHaveLength(1);
  });
});
