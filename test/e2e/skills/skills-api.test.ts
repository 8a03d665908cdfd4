/**
 * Skills over HTTP (gateway/src/routes/skills.ts, core/src/skills): the spec's JSON, multipart
 * and zip forms; versions, zip download, file download, delete; built-ins; every bad input a
 * 400 naming the problem with nothing half-written; tenant isolation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { strToU8, zipSync } from 'fflate';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import {
  createJson,
  expectError,
  form,
  skillMd,
  uniqueName,
  unzipResponse,
} from './skillsHelpers.js';

let t: TestPlatform;
let key: string;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', RATE_LIMIT_PER_MINUTE: '100000' } });
  key = (await t.newTenant('skills-a')).apiKey;
});
afterAll(() => t?.close());

const get = (path: string, k = key) => t.http(path, { key: k });
const del = (path: string, k = key) => t.http(path, { method: 'DELETE', key: k });
const post = (path: string, body: FormData, k = key) =>
  t.http(path, { method: 'POST', key: k, body });
const customCount = async (k = key) =>
  ((await (await get('/v1/skills?source=custom&limit=100', k)).json()) as { data: unknown[] }).data
    .length;

describe('custom skills', () => {
  it('JSON create, versions, file and zip download, version delete, skill delete', async () => {
    const name = uniqueName('report-writer');
    const res = await createJson(t, key, [
      { filename: 'SKILL.md', content: skillMd(name, 'Writes reports.') },
      { filename: 'scripts/run.py', content: 'print("v1")\n' },
    ]);
    expect(res.status).toBe(200);
    const skill = (await res.json()) as Record<string, string>;
    expect(skill).toMatchObject({
      type: 'skill',
      name,
      display_title: name,
      display_name: name,
      description: 'Writes reports.',
      source: 'custom',
    });
    expect(skill.id).toMatch(/^skill_/);
    expect(skill.latest_version).toMatch(/^\d{16}$/);
    expect(skill.latest_version_id).toBe(skill.latest_version);
    const v1 = skill.latest_version!;
    expect(await (await get(`/v1/skills/${skill.id}`)).json()).toEqual(skill);

    const file = await get(`/v1/skills/${skill.id}/files/scripts/run.py`);
    expect(file.status).toBe(200);
    expect(await file.text()).toBe('print("v1")\n');

    // A new version: JSON on /versions; the name stays.
    const vres = await t.http(`/v1/skills/${skill.id}/versions`, {
      method: 'POST',
      key,
      json: {
        files: [
          { filename: 'SKILL.md', content: skillMd(name, 'Writes better reports.') },
          { filename: 'scripts/run.py', content: 'print("v2")\n' },
        ],
      },
    });
    expect(vres.status).toBe(200);
    const v2 = (await vres.json()) as Record<string, unknown>;
    expect(v2).toMatchObject({
      type: 'skill_version',
      skill_id: skill.id,
      name,
      description: 'Writes better reports.',
      files: [
        { filename: 'SKILL.md', size_bytes: expect.any(Number) },
        { filename: 'scripts/run.py', size_bytes: 12 },
      ],
    });
    expect(v2.id).toBe(v2.version);
    expect(BigInt(v2.version as string)).toBeGreaterThan(BigInt(v1));
    const after = (await (await get(`/v1/skills/${skill.id}`)).json()) as Record<string, string>;
    expect(after.latest_version).toBe(v2.version);
    expect(after.description).toBe('Writes better reports.');

    // Latest file by default; ?version= an older one.
    expect(await (await get(`/v1/skills/${skill.id}/files/scripts/run.py`)).text()).toBe(
      'print("v2")\n',
    );
    expect(
      await (await get(`/v1/skills/${skill.id}/files/scripts/run.py?version=${v1}`)).text(),
    ).toBe('print("v1")\n');
    await expectError(await get(`/v1/skills/${skill.id}/files/nope.txt`), 404, /nope\.txt/);

    const list = (await (await get(`/v1/skills/${skill.id}/versions`)).json()) as {
      data: Array<{ version: string }>;
    };
    expect(list.data.map((v) => v.version)).toEqual([v2.version, v1]);
    const one = (await (await get(`/v1/skills/${skill.id}/versions/${v1}`)).json()) as {
      files: Array<{ filename: string }>;
    };
    expect(one.files.map((f) => f.filename)).toEqual(['SKILL.md', 'scripts/run.py']);

    const zip = await get(`/v1/skills/${skill.id}/versions/${v1}/content`);
    expect(zip.status).toBe(200);
    expect(zip.headers.get('content-type')).toBe('application/zip');
    const entries = await unzipResponse(zip);
    expect(Object.keys(entries).sort()).toEqual([`${name}/SKILL.md`, `${name}/scripts/run.py`]);
    expect(entries[`${name}/scripts/run.py`]).toBe('print("v1")\n');
    expect(entries[`${name}/SKILL.md`]).toContain('Writes reports.');

    // Deleting the latest version moves latest back; the only version cannot be deleted.
    expect(await (await del(`/v1/skills/${skill.id}/versions/${v2.version}`)).json()).toEqual({
      id: v2.version,
      type: 'skill_version_deleted',
    });
    expect(((await (await get(`/v1/skills/${skill.id}`)).json()) as Skill).latest_version).toBe(v1);
    await expectError(await get(`/v1/skills/${skill.id}/versions/${v2.version}`), 404, /version/);
    await expectError(
      await del(`/v1/skills/${skill.id}/versions/${v1}`),
      400,
      /only version.*delete the skill/,
    );

    expect(await (await del(`/v1/skills/${skill.id}`)).json()).toEqual({
      id: skill.id,
      type: 'skill_deleted',
    });
    await expectError(await get(`/v1/skills/${skill.id}`), 404, /not found/);
    await expectError(await get(`/v1/skills/${skill.id}/versions`), 404, /not found/);
    await expectError(await get(`/v1/skills/${skill.id}/files/SKILL.md`), 404, /not found/);
    // The name is free again.
    const again = await createJson(t, key, [{ filename: 'SKILL.md', content: skillMd(name) }]);
    expect(again.status).toBe(200);
    await del(`/v1/skills/${((await again.json()) as Skill).id}`);
  });

  it('multipart spec form (display_title, description, files in a top-level dir); `id` publishes a new version', async () => {
    const name = uniqueName('csv-tools');
    const res = await post(
      '/v1/skills',
      form({ display_title: 'CSV tools', description: 'Tools for CSV files.' }, [
        { field: 'files', filename: `${name}/SKILL.md`, content: skillMd(name) },
        { field: 'files', filename: `${name}/lib/csv.py`, content: 'import csv\n' },
      ]),
    );
    expect(res.status).toBe(200);
    const skill = (await res.json()) as Skill;
    expect(skill).toMatchObject({
      name,
      display_title: 'CSV tools',
      description: 'Tools for CSV files.',
      source: 'custom',
    });
    const up = await post(
      '/v1/skills',
      form({ id: skill.id }, [
        { field: 'files', filename: 'SKILL.md', content: skillMd(name, 'Second.') },
      ]),
    );
    expect(up.status).toBe(200);
    const updated = (await up.json()) as Skill;
    expect(updated.id).toBe(skill.id);
    expect(BigInt(updated.latest_version)).toBeGreaterThan(BigInt(skill.latest_version));
    const v = (await (await get(`/v1/skills/${skill.id}/versions/latest`)).json()) as {
      files: Array<{ filename: string }>;
    };
    expect(v.files.map((f) => f.filename)).toEqual(['SKILL.md']);
    await del(`/v1/skills/${skill.id}`);
  });

  it('zip upload at /v1/skills/upload', async () => {
    const name = uniqueName('zipped');
    const zip = zipSync({
      [`${name}/SKILL.md`]: strToU8(skillMd(name)),
      [`${name}/data/table.csv`]: strToU8('a,b\n1,2\n'),
    });
    const res = await post(
      '/v1/skills/upload',
      form({ display_title: 'Zipped' }, [{ field: 'file', filename: 'skill.zip', content: zip }]),
    );
    expect(res.status).toBe(200);
    const skill = (await res.json()) as Skill;
    expect(skill).toMatchObject({ name, display_title: 'Zipped' });
    expect(await (await get(`/v1/skills/${skill.id}/files/data/table.csv`)).text()).toBe(
      'a,b\n1,2\n',
    );
    await del(`/v1/skills/${skill.id}`);
  });

  it('lists with source filter and page cursors', async () => {
    const made: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await createJson(t, key, [
        { filename: 'SKILL.md', content: skillMd(uniqueName('paged')) },
      ]);
      made.push(((await r.json()) as Skill).id);
    }
    const seen: string[] = [];
    let page: string | null = null;
    do {
      const q: string = `/v1/skills?source=custom&limit=2${page ? `&page=${page}` : ''}`;
      const body = (await (await get(q)).json()) as {
        data: Skill[];
        has_more: boolean;
        next_page: string | null;
      };
      expect(body.data.length).toBeLessThanOrEqual(2);
      seen.push(...body.data.map((s) => s.id));
      page = body.next_page;
      expect(body.has_more).toBe(page !== null);
    } while (page);
    expect(seen).toEqual([...made].reverse());
    await expectError(await get('/v1/skills?source=other'), 400, /source/);
    for (const id of made) await del(`/v1/skills/${id}`);
  });
});

interface Skill {
  id: string;
  name: string;
  source: unknown;
  latest_version: string;
}

describe('built-in skills', () => {
  it('xlsx, pdf, docx, pptx: listed for every tenant, readable, downloadable, not deletable', async () => {
    const other = await t.newTenant('skills-builtin');
    for (const k of [key, other.apiKey]) {
      const body = (await (await get('/v1/skills?source=vendor', k)).json()) as { data: Skill[] };
      expect(body.data.map((s) => s.id).sort()).toEqual(['docx', 'pdf', 'pptx', 'xlsx']);
      for (const s of body.data) expect(s.source).toBe('vendor');
    }
    const all = (await (await get('/v1/skills?limit=100')).json()) as { data: Skill[] };
    expect(all.data.slice(0, 4).map((s) => s.id)).toEqual(['docx', 'pdf', 'pptx', 'xlsx']);
    const pdf = (await (await get('/v1/skills/pdf')).json()) as Skill;
    expect(pdf).toMatchObject({ id: 'pdf', name: 'pdf', source: 'vendor' });
    expect(pdf.latest_version).toMatch(/^\d{16}$/);
    const md = await get('/v1/skills/pdf/files/SKILL.md');
    expect(await md.text()).toMatch(/^---\nname: pdf\n/);
    const script = await get('/v1/skills/pdf/files/scripts/make_pdf.py');
    expect(script.status).toBe(200);
    expect(await script.text()).toContain('reportlab');
    const zip = await unzipResponse(
      await get(`/v1/skills/pdf/versions/${pdf.latest_version}/content`),
    );
    expect(Object.keys(zip)).toContain('pdf/SKILL.md');
    await expectError(await del('/v1/skills/pdf'), 400, /pdf.*built-in.*cannot be deleted/);
    await expectError(
      await del(`/v1/skills/xlsx/versions/${pdf.latest_version}`),
      400,
      /xlsx.*built-in/,
    );
    expect((await get('/v1/skills/pdf')).status).toBe(200);
    // A custom skill cannot take a built-in's name (the mount folder).
    await expectError(
      await createJson(t, key, [{ filename: 'SKILL.md', content: skillMd('pdf') }]),
      400,
      /"pdf" is the name of a built-in skill/,
    );
  });
});
