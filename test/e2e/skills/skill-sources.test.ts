/**
 * Skill sources (/v1/svc/skill-sources/*) against a local HTTPS source (test/kit/fixtures/
 * skillSource.ts: its own certificate trusted through EGRESS_CA_CERTS, its loopback host opened
 * through SKILL_SOURCES_ALLOW_HOSTS), in-process platform, plain HTTP with the beta header:
 * - index lookup: `<url>/.well-known/agent-skills/index.json`, the legacy
 *   `.well-known/skills/` path, and the origin-root fallback (in that order);
 * - index v0.1 (files next to the index) and v0.2 (SKILL.md, .zip, .tar.gz), each digest-verified;
 *   a tampered digest is a 400 naming the skill and installs nothing;
 * - installing again: changed → a new version, unchanged → the same version;
 * - check-updates (update_available, removed and kept), update, installed (source + digest);
 * - http sources, unopened private addresses, archive symlinks and traversal: 400s;
 * - another tenant's skill ids are 404s and its installed list is its own.
 */
import { loadConfig } from '@agentfleet/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import {
  digestOf,
  publishIndexV2,
  SCHEMA_V02 as SCHEMA,
  skillLevelDigest as skillLevel,
  skillMd,
  startSkillSource,
  tarGzOf,
  zipOf,
  type PublishedSkill,
  type SkillSourceFixture,
} from '../../kit/fixtures/skillSource.js';

let t: TestPlatform;
let src: SkillSourceFixture;

beforeAll(async () => {
  src = await startSkillSource();
  t = await startPlatform({
    env: {
      SANDBOX_DRIVER: 'none',
      SKILL_SOURCES_ALLOW_HOSTS: src.host,
      EGRESS_CA_CERTS: src.certFile,
    },
  });
});
afterAll(async () => {
  await t?.close();
  await src?.close();
});

const call = async (path: string, json?: unknown, key?: string) => {
  const res = await t.http(`/v1/svc/skill-sources/${path}`, {
    method: json === undefined ? 'GET' : 'POST',
    headers: BETA,
    key,
    json,
  });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) as any };
};
const fileOf = async (id: string, version: string, path: string, key?: string) => {
  const res = await t.http(`/v1/skills/${id}/files/${path}?version=${version}`, { key });
  expect(res.status, path).toBe(200);
  return res.text();
};

const publishV2 = (prefix: string, skills: PublishedSkill[]) => publishIndexV2(src, prefix, skills);

describe('skill sources: index lookup', () => {
  it('discover finds <url>/.well-known/agent-skills/index.json (v0.2) first', async () => {
    const md = skillMd('lookup-a', 'finds things', '# A');
    const index = publishV2('/lookup', [
      { name: 'lookup-a', file: 'lookup-a/SKILL.md', bytes: md },
    ]);
    const r = await call('discover', { url: `${src.origin}/lookup` });
    expect(r.status, r.text).toBe(200);
    expect(r.body).toEqual({
      source: index,
      skills: [
        {
          name: 'lookup-a',
          description: 'the lookup-a skill',
          type: 'skill-md',
          digest: digestOf(md),
          installed_skill_id: null,
        },
      ],
    });
  });

  it('then the legacy <url>/.well-known/skills/index.json (v0.1)', async () => {
    src.put(
      '/legacy/.well-known/skills/index.json',
      JSON.stringify({ skills: [{ name: 'old-one', description: 'legacy', files: ['SKILL.md'] }] }),
    );
    const from = src.requests.length;
    const r = await call('discover', { url: `${src.origin}/legacy/` });
    expect(r.status, r.text).toBe(200);
    expect(r.body.source).toBe(`${src.origin}/legacy/.well-known/skills/index.json`);
    expect(r.body.skills).toEqual([
      {
        name: 'old-one',
        description: 'legacy',
        type: 'files',
        digest: null,
        installed_skill_id: null,
      },
    ]);
    expect(src.requests.slice(from)).toEqual([
      '/legacy/.well-known/agent-skills/index.json',
      '/legacy/.well-known/skills/index.json',
    ]);
  });

  it('then both paths at the origin root', async () => {
    src.put(
      '/.well-known/skills/index.json',
      JSON.stringify({
        skills: [{ name: 'root-one', description: 'at the root', files: ['SKILL.md'] }],
      }),
    );
    const from = src.requests.length;
    const r = await call('discover', { url: `${src.origin}/nothing/here?x=1` });
    expect(r.status, r.text).toBe(200);
    expect(r.body.source).toBe(`${src.origin}/.well-known/skills/index.json`);
    expect(src.requests.slice(from)).toEqual([
      '/nothing/here/.well-known/agent-skills/index.json',
      '/nothing/here/.well-known/skills/index.json',
      '/.well-known/agent-skills/index.json',
      '/.well-known/skills/index.json',
    ]);
    src.remove('/.well-known/skills/index.json');
    const none = await call('discover', { url: `${src.origin}/nothing/here` });
    expect(none.status).toBe(400);
    expect(none.body.error.message).toMatch(/no skills index found/);
  });
});

describe('skill sources: install', () => {
  it('index v0.1: files next to the index, recorded with the skill-level digest', async () => {
    const files = {
      'SKILL.md': skillMd('hello-v1', 'says hello', 'Run scripts/hello.sh'),
      'scripts/hello.sh': '#!/bin/sh\necho hello\n',
    };
    src.put(
      '/v1src/.well-known/skills/index.json',
      JSON.stringify({
        skills: [{ name: 'hello-v1', description: 'says hello', files: Object.keys(files) }],
      }),
    );
    for (const [p, c] of Object.entries(files))
      src.put(`/v1src/.well-known/skills/hello-v1/${p}`, c);
    const r = await call('install', { url: `${src.origin}/v1src`, skills: ['hello-v1'] });
    expect(r.status, r.text).toBe(200);
    const [s] = r.body.skills;
    expect(s).toMatchObject({ name: 'hello-v1', status: 'installed', digest: skillLevel(files) });
    expect(await fileOf(s.skill_id, s.version, 'scripts/hello.sh')).toBe(files['scripts/hello.sh']);
    expect(await fileOf(s.skill_id, s.version, 'SKILL.md')).toBe(files['SKILL.md']);
  });

  it('index v0.2: a SKILL.md, a .zip and a .tar.gz, each digest-verified', async () => {
    const md = skillMd('plain-md', 'just markdown', '# Plain');
    const zip = zipOf({
      'SKILL.md': skillMd('zipped', 'from a zip', 'see scripts/z.py'),
      'scripts/z.py': 'print("zip")\n',
    });
    const tgz = await tarGzOf({
      'SKILL.md': skillMd('tarred', 'from a tarball', 'see ref/notes.md'),
      'ref/notes.md': 'tar notes\n',
    });
    publishV2('/v2src', [
      { name: 'plain-md', file: 'plain-md/SKILL.md', bytes: md },
      { name: 'zipped', file: 'zipped.zip', bytes: zip },
      { name: 'tarred', file: 'tarred.tar.gz', bytes: tgz },
    ]);
    const r = await call('install', {
      url: `${src.origin}/v2src`,
      skills: ['plain-md', 'zipped', 'tarred'],
    });
    expect(r.status, r.text).toBe(200);
    const by = Object.fromEntries(r.body.skills.map((s: any) => [s.name, s]));
    expect(by['plain-md']).toMatchObject({ status: 'installed', digest: digestOf(md) });
    expect(by.zipped).toMatchObject({ status: 'installed', digest: digestOf(zip) });
    expect(by.tarred).toMatchObject({ status: 'installed', digest: digestOf(tgz) });
    expect(await fileOf(by.zipped.skill_id, by.zipped.version, 'scripts/z.py')).toBe(
      'print("zip")\n',
    );
    expect(await fileOf(by.tarred.skill_id, by.tarred.version, 'ref/notes.md')).toBe('tar notes\n');
    expect(await fileOf(by['plain-md'].skill_id, by['plain-md'].version, 'SKILL.md')).toBe(md);
  });

  it('a tampered digest: 400 naming the skill, and nothing of the request installed', async () => {
    const good = skillMd('fine-one', 'fine', '# fine');
    const bad = skillMd('tampered', 'tampered', '# evil');
    publishV2('/tampered', [
      { name: 'fine-one', file: 'fine-one/SKILL.md', bytes: good },
      { name: 'tampered', file: 'tampered.md', bytes: bad, digest: digestOf('something else') },
    ]);
    const r = await call('install', {
      url: `${src.origin}/tampered`,
      skills: ['fine-one', 'tampered'],
    });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.message).toMatch(/skill 'tampered': digest mismatch/);
    expect(r.body.error.details?.field).toBe('skills[1]');
    const names = (await call('installed')).body.data.map((s: any) => s.name);
    expect(names).not.toContain('fine-one');
    const all = (await (await t.http('/v1/skills?limit=100')).json()) as any;
    expect(all.data.map((s: any) => s.name)).not.toContain('fine-one');
  });

  it('archives with a symlink or a traversal entry are refused', async () => {
    const link = await tarGzOf(
      { 'SKILL.md': skillMd('linky', 'l', 'x') },
      { 'etc-passwd': '/etc/passwd' },
    );
    const trav = zipOf({ 'SKILL.md': skillMd('travel', 't', 'x'), '../escape.txt': 'x' });
    publishV2('/unsafe', [
      { name: 'linky', file: 'linky.tar.gz', bytes: link },
      { name: 'travel', file: 'travel.zip', bytes: trav },
    ]);
    const a = await call('install', { url: `${src.origin}/unsafe`, skills: ['linky'] });
    expect(a.status, a.text).toBe(400);
    expect(a.body.error.message).toMatch(/skill 'linky'.*not a regular file/);
    const b = await call('install', { url: `${src.origin}/unsafe`, skills: ['travel'] });
    expect(b.status, b.text).toBe(400);
    expect(b.body.error.message).toMatch(/skill 'travel'.*\.\./);
    // 9 MiB of zeros in 9 files (a few KiB gzipped): cut while inflating, over the 8 MiB limit
    const zeros = new Uint8Array(1024 * 1024);
    const files: Record<string, Uint8Array | string> = { 'SKILL.md': skillMd('bomb', 'b', 'x') };
    for (let i = 0; i < 9; i++) files[`z${i}.bin`] = zeros;
    publishV2('/bomb', [{ name: 'bomb', file: 'bomb.tar.gz', bytes: await tarGzOf(files) }]);
    const c = await call('install', { url: `${src.origin}/bomb`, skills: ['bomb'] });
    expect(c.status, c.text).toBe(400);
    expect(c.body.error.message).toMatch(/skill 'bomb'.*more than 8388608 bytes/);
  });

  it('installing again: unchanged → same version; changed → a new version of the same skill', async () => {
    const v1 = skillMd('evolving', 'changes', 'first');
    publishV2('/evolve', [{ name: 'evolving', file: 'e.md', bytes: v1 }]);
    const url = `${src.origin}/evolve`;
    const first = (await call('install', { url, skills: ['evolving'] })).body.skills[0];
    const again = await call('install', { url, skills: ['evolving'] });
    expect(again.body.skills[0]).toEqual({ ...first, status: 'unchanged' });
    const v2 = skillMd('evolving', 'changes', 'second');
    publishV2('/evolve', [{ name: 'evolving', file: 'e.md', bytes: v2 }]);
    const changed = (await call('install', { url, skills: ['evolving'] })).body.skills[0];
    expect(changed).toMatchObject({
      skill_id: first.skill_id,
      status: 'updated',
      digest: digestOf(v2),
    });
    expect(Number(changed.version)).toBeGreaterThan(Number(first.version));
    expect(await fileOf(first.skill_id, first.version, 'SKILL.md')).toBe(v1);
    expect(await fileOf(first.skill_id, changed.version, 'SKILL.md')).toBe(v2);
  });
});

describe('skill sources: updates', () => {
  it('check-updates reports update_available and removed (the skill kept); update publishes; installed lists url + digest', async () => {
    const a1 = skillMd('upd-a', 'a', 'a1');
    const b1 = skillMd('upd-b', 'b', 'b1');
    const index = publishV2('/upd', [
      { name: 'upd-a', file: 'a.md', bytes: a1 },
      { name: 'upd-b', file: 'b.md', bytes: b1 },
    ]);
    const inst = (await call('install', { url: `${src.origin}/upd`, skills: ['upd-a', 'upd-b'] }))
      .body;
    const [a, b] = inst.skills;
    const ids = [a.skill_id, b.skill_id];
    const fresh = await call('check-updates', { skill_ids: ids });
    expect(fresh.body.data.map((c: any) => c.status)).toEqual(['up_to_date', 'up_to_date']);

    const a2 = skillMd('upd-a', 'a', 'a2');
    publishV2('/upd', [{ name: 'upd-a', file: 'a.md', bytes: a2 }]); // b is gone
    const check = await call('check-updates', { skill_ids: ids });
    expect(check.status, check.text).toBe(200);
    expect(check.body.data).toEqual([
      {
        skill_id: a.skill_id,
        name: 'upd-a',
        source: index,
        digest: digestOf(a1),
        status: 'update_available',
        available_digest: digestOf(a2),
        version: a.version,
        error: null,
      },
      {
        skill_id: b.skill_id,
        name: 'upd-b',
        source: index,
        digest: digestOf(b1),
        status: 'removed',
        available_digest: null,
        version: b.version,
        error: null,
      },
    ]);
    // without skill_ids: every installed skill, these two among them
    const all = await call('check-updates', {});
    const mine = all.body.data.filter((c: any) => ids.includes(c.skill_id));
    expect(mine.map((c: any) => c.status)).toEqual(['update_available', 'removed']);

    const upd = await call('update', { skill_ids: ids });
    expect(upd.status, upd.text).toBe(200);
    const [ua, ub] = upd.body.data;
    expect(ua).toMatchObject({ status: 'updated', digest: digestOf(a2), skill_id: a.skill_id });
    expect(Number(ua.version)).toBeGreaterThan(Number(a.version));
    expect(ub).toMatchObject({ status: 'removed', version: b.version });
    expect(await fileOf(a.skill_id, ua.version, 'SKILL.md')).toBe(a2);
    // the removed skill is kept
    expect((await t.http(`/v1/skills/${b.skill_id}`)).status).toBe(200);

    const installed = await call('installed');
    expect(installed.status).toBe(200);
    const rows = installed.body.data.filter((s: any) => ids.includes(s.skill_id));
    expect(rows).toEqual([
      {
        skill_id: a.skill_id,
        name: 'upd-a',
        source: index,
        digest: digestOf(a2),
        latest_version: ua.version,
      },
      {
        skill_id: b.skill_id,
        name: 'upd-b',
        source: index,
        digest: digestOf(b1),
        latest_version: b.version,
      },
    ]);
    const again = await call('check-updates', { skill_ids: [a.skill_id] });
    expect(again.body.data[0].status).toBe('up_to_date');
    // the index itself gone: unreachable, with the reason; nothing deleted
    src.remove('/upd/.well-known/agent-skills/index.json');
    const gone = await call('check-updates', { skill_ids: [a.skill_id] });
    expect(gone.body.data[0]).toMatchObject({ status: 'unreachable', version: ua.version });
    expect(gone.body.data[0].error).toMatch(/no skills index found/);
  });
});

describe('skill sources: a tampered update', () => {
  it('update whose new artifact does not match the index digest: 400 naming the skill, no new version', async () => {
    const v1 = skillMd('guarded', 'g', 'one');
    publishV2('/guard', [{ name: 'guarded', file: 'g.md', bytes: v1 }]);
    const s = (await call('install', { url: `${src.origin}/guard`, skills: ['guarded'] })).body
      .skills[0];
    const v2 = skillMd('guarded', 'g', 'two');
    publishV2('/guard', [{ name: 'guarded', file: 'g.md', bytes: v2, digest: digestOf('other') }]);
    const r = await call('update', { skill_ids: [s.skill_id] });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.message).toMatch(/skill 'guarded': digest mismatch/);
    const rows = (await call('installed')).body.data.filter((x: any) => x.skill_id === s.skill_id);
    expect(rows).toEqual([
      expect.objectContaining({ digest: digestOf(v1), latest_version: s.version }),
    ]);
  });
});

describe('skill sources: refusals', () => {
  it('an http:// source is a 400', async () => {
    const r = await call('discover', { url: `http://127.0.0.1:${new URL(src.origin).port}/` });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toMatch(/^url: .*https/);
  });

  it('an index pointing at an http:// artifact: 400 naming the skill, nothing fetched over http', async () => {
    const md = skillMd('plain-http', 'p', 'x');
    const base = '/httpart/.well-known/agent-skills';
    src.put(
      `${base}/index.json`,
      JSON.stringify({
        $schema: SCHEMA,
        skills: [
          {
            name: 'plain-http',
            description: 'p',
            type: 'skill-md',
            url: `http://127.0.0.1:${new URL(src.origin).port}${base}/p.md`,
            digest: digestOf(md),
          },
        ],
      }),
    );
    const r = await call('install', { url: `${src.origin}/httpart`, skills: ['plain-http'] });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.message).toMatch(
      /^skills\[0\]: skill 'plain-http': skill sources must use https/,
    );
  });

  it('a source resolving to 127.0.0.1 that is not opened is a 400 naming SKILL_SOURCES_ALLOW_HOSTS', async () => {
    const from = src.requests.length;
    const r = await call('install', { url: 'https://localhost:44123/skills', skills: ['x'] });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.message).toMatch(/SKILL_SOURCES_ALLOW_HOSTS/);
    expect(r.body.error.message).not.toMatch(/127\.0\.0\.1/);
    expect(src.requests.length).toBe(from);
  });

  it('redirects are followed over https only; an index over 1 MiB is refused', async () => {
    const md = skillMd('moved', 'm', 'x');
    const index = publishV2('/moved-here', [{ name: 'moved', file: 'm.md', bytes: md }]);
    src.redirect('/moved/.well-known/agent-skills/index.json', index);
    const ok = await call('install', { url: `${src.origin}/moved`, skills: ['moved'] });
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.source).toBe(`${src.origin}/moved/.well-known/agent-skills/index.json`);
    const port = new URL(src.origin).port;
    src.redirect('/downgrade/.well-known/agent-skills/index.json', `http://127.0.0.1:${port}/x`);
    const down = await call('discover', { url: `${src.origin}/downgrade` });
    expect(down.status, down.text).toBe(400);
    expect(down.body.error.message).toMatch(/must use https/);
    src.put('/big/.well-known/agent-skills/index.json', ' '.repeat(1024 * 1024 + 1));
    const big = await call('discover', { url: `${src.origin}/big` });
    expect(big.status, big.text).toBe(400);
    expect(big.body.error.message).toMatch(/larger than 1048576 bytes/);
  });

  it('SKILL_SOURCES_ALLOW_HOSTS is parsed at start-up; a bad entry is a config problem naming it', () => {
    const base = { DATA_DIR: '/tmp/agentfleet-skill-sources-config-test' };
    const rules = loadConfig('all', {
      ...base,
      SKILL_SOURCES_ALLOW_HOSTS: 'intranet.corp, 10.0.0.5:8443',
    }).skillSources.allowHosts;
    expect(rules).toEqual([
      { host: 'intranet.corp', port: null },
      { host: '10.0.0.5', port: 8443 },
    ]);
    expect(() => loadConfig('all', { ...base, SKILL_SOURCES_ALLOW_HOSTS: 'bad host!' })).toThrow(
      /SKILL_SOURCES_ALLOW_HOSTS: 'bad host!'/,
    );
  });

  it("a name taken by the tenant's own skill or a built-in is a 400 naming skills[i]", async () => {
    const own = await t.http('/v1/skills', {
      method: 'POST',
      json: { files: [{ filename: 'SKILL.md', content: skillMd('taken-name', 'mine', 'x') }] },
    });
    expect(own.status, await own.clone().text()).toBe(200);
    publishV2('/taken', [
      { name: 'taken-name', file: 'a.md', bytes: skillMd('taken-name', 'theirs', 'y') },
      { name: 'pdf', file: 'pdf.md', bytes: skillMd('pdf', 'not the built-in', 'z') },
    ]);
    const a = await call('install', { url: `${src.origin}/taken`, skills: ['taken-name'] });
    expect(a.status, a.text).toBe(400);
    expect(a.body.error.message).toMatch(/^skills\[0\]: a skill named 'taken-name' already exists/);
    const b = await call('install', { url: `${src.origin}/taken`, skills: ['pdf'] });
    expect(b.status, b.text).toBe(400);
    expect(b.body.error.message).toMatch(/built-in/);
  });

  it('without the beta header: 400', async () => {
    const res = await t.http('/v1/svc/skill-sources/installed');
    expect(res.status).toBe(400);
  });
});

describe('skill sources: tenants', () => {
  it("another tenant's skill ids are 404s; installed and discover are per tenant", async () => {
    const md = skillMd('tenant-a-skill', 'mine', '# A');
    publishV2('/tenants', [{ name: 'tenant-a-skill', file: 't.md', bytes: md }]);
    const url = `${src.origin}/tenants`;
    const a = (await call('install', { url, skills: ['tenant-a-skill'] })).body.skills[0];
    const b = await t.newTenant('skills-b');
    for (const path of ['check-updates', 'update']) {
      const r = await call(path, { skill_ids: [a.skill_id] }, b.apiKey);
      expect(r.status, `${path}: ${r.text}`).toBe(404);
      expect(r.body.error.type).toBe('not_found');
    }
    expect((await call('installed', undefined, b.apiKey)).body.data).toEqual([]);
    expect((await call('check-updates', {}, b.apiKey)).body.data).toEqual([]);
    const seen = await call('discover', { url }, b.apiKey);
    expect(seen.body.skills[0].installed_skill_id).toBeNull();
    expect((await call('discover', { url })).body.skills[0].installed_skill_id).toBe(a.skill_id);
    // B installs the same skill: its own copy
    const mine = (await call('install', { url, skills: ['tenant-a-skill'] }, b.apiKey)).body
      .skills[0];
    expect(mine.status).toBe('installed');
    expect(mine.skill_id).not.toBe(a.skill_id);
  });

  it('a skill not installed from a source is a 400 naming skill_ids[i]', async () => {
    const r = await call('check-updates', { skill_ids: ['xlsx'] });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error.details?.field).toBe('skill_ids[0]');
  });
});
