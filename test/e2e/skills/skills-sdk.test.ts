/**
 * Skills through the official TypeScript SDK (`client.beta.skills`, `.skills.versions`):
 * create with files in one top-level directory (multipart `files[]`, names kept), retrieve,
 * list (with `source`, auto-pagination), versions create/list/retrieve/download/delete, delete.
 * SDK requests get the SDK's `source` object.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Anthropic, { toFile } from '@anthropic-ai/sdk';
import { strFromU8, unzipSync } from 'fflate';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import { skillMd, uniqueName } from './skillsHelpers.js';

let t: TestPlatform;
let client: Anthropic;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none', RATE_LIMIT_PER_MINUTE: '100000' } });
  client = (await t.newTenant('skills-sdk')).client;
});
afterAll(() => t?.close());

const filesOf = async (dir: string, files: Record<string, string>) =>
  Promise.all(
    Object.entries(files).map(([name, text]) => toFile(Buffer.from(text), `${dir}/${name}`)),
  );

describe('skills via the TypeScript SDK', () => {
  it('create, retrieve, list, versions (create, list, retrieve, download, delete), delete', async () => {
    const name = uniqueName('sdk-skill');
    const skill = await client.beta.skills.create({
      files: await filesOf(name, {
        'SKILL.md': skillMd(name, 'From the SDK.'),
        'scripts/hello.py': 'print("hello")\n',
      }),
      display_name: 'SDK skill',
    });
    expect(skill).toMatchObject({
      type: 'skill',
      display_name: 'SDK skill',
      source: { type: 'custom' },
    });
    expect(skill.id).toMatch(/^skill_/);
    expect(skill.latest_version_id).toMatch(/^\d{16}$/);
    expect(await client.beta.skills.retrieve(skill.id)).toEqual(skill);

    const custom = [];
    for await (const s of client.beta.skills.list({ source: 'custom', limit: 1 })) custom.push(s);
    expect(custom.map((s) => s.id)).toContain(skill.id);
    const vendor = (await client.beta.skills.list({ source: 'anthropic' })).data;
    expect(vendor.map((s) => s.id).sort()).toEqual(['docx', 'pdf', 'pptx', 'xlsx']);
    expect(vendor[0]!.source).toEqual({ type: 'anthropic' });

    const v2 = await client.beta.skills.versions.create(skill.id, {
      files: await filesOf(name, {
        'SKILL.md': skillMd(name, 'Second version.'),
        'scripts/hello.py': 'print("hello again")\n',
      }),
    });
    expect(v2).toMatchObject({
      type: 'skill_version',
      skill_id: skill.id,
      name,
      description: 'Second version.',
    });
    expect(BigInt(v2.id)).toBeGreaterThan(BigInt(skill.latest_version_id));
    expect((await client.beta.skills.retrieve(skill.id)).latest_version_id).toBe(v2.id);

    const versions = [];
    for await (const v of client.beta.skills.versions.list(skill.id)) versions.push(v.id);
    expect(versions).toEqual([v2.id, skill.latest_version_id]);
    const first = await client.beta.skills.versions.retrieve(skill.latest_version_id, {
      skill_id: skill.id,
    });
    expect(first.description).toBe('From the SDK.');

    const res = await client.beta.skills.versions.download(v2.id, { skill_id: skill.id });
    const zip = unzipSync(new Uint8Array(await res.arrayBuffer()));
    expect(Object.keys(zip).sort()).toEqual([`${name}/SKILL.md`, `${name}/scripts/hello.py`]);
    expect(strFromU8(zip[`${name}/scripts/hello.py`]!)).toBe('print("hello again")\n');

    expect(
      await client.beta.skills.versions.delete(skill.latest_version_id, { skill_id: skill.id }),
    ).toEqual({ id: skill.latest_version_id, type: 'skill_version_deleted' });
    await expect(
      client.beta.skills.versions.delete(v2.id, { skill_id: skill.id }),
    ).rejects.toMatchObject({ status: 400 });

    expect(await client.beta.skills.delete(skill.id)).toEqual({
      id: skill.id,
      type: 'skill_deleted',
    });
    await expect(client.beta.skills.retrieve(skill.id)).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
    await expect(client.beta.skills.delete('pdf')).rejects.toBeInstanceOf(
      Anthropic.BadRequestError,
    );
  });
});
