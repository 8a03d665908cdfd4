/**
 * The sandbox lifecycle (SandboxManager) on real local sandboxes and the directory object store:
 * idle → snapshot → stop → restore, keepalive, crash (SIGKILL of bwrap) → last snapshot, marker
 * removed → warmup reruns, resources that cannot be prepared fail the warmup, destroy takes an
 * eager snapshot, outputs sync, one warmup per session, backups swept after 7 days.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createDirectoryObjectStore } from '../src/objects/directory.js';
import { createLogger } from '../src/log.js';
import type { ObjectStore } from '../src/objects/port.js';
import type { SandboxSpec, SessionRef } from '../src/sandbox/port.js';
import {
  createLocalDriver,
  type LocalDriver,
  type LocalSandboxHandle,
} from '../src/sandbox/drivers/bubblewrap/driver.js';
import {
  BACKUP_TTL_MS,
  WARM_MARKER,
  createSandboxManager,
  latestPointerKey,
  snapshotKey,
  snapshotTime,
  type SandboxEvent,
  type SandboxManagerDeps,
  type SandboxManagerService,
  type SandboxResource,
} from '../src/sandbox/manager/manager.js';

const log = createLogger('silent');
let dir: string;
let objects: ObjectStore;
let driver: LocalDriver;
let handles: LocalSandboxHandle[];
let events: SandboxEvent[];
const managers: SandboxManagerService[] = [];
let seq = 0;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sbx-mgr-'));
  objects = createDirectoryObjectStore(join(dir, 'objects'));
  const inner = createLocalDriver({ rootDir: join(dir, 'sandboxes') });
  handles = [];
  driver = {
    name: 'local',
    async start(spec) {
      const h = await inner.start(spec);
      handles.push(h);
      return h;
    },
    close: () => inner.close(),
  };
  events = [];
});

afterEach(async () => {
  for (const m of managers.splice(0)) await m.close().catch(() => {});
  await driver.close();
  await rm(dir, { recursive: true, force: true });
});

const session = (): SessionRef => ({
  tenantId: 'tnt_a',
  environmentId: 'env_a',
  sessionId: `sesn_${process.pid}_${seq++}`,
});

function manager(
  over: Partial<SandboxManagerDeps> = {},
  resources: (s: SessionRef) => Promise<SandboxResource[]> = async () => [],
) {
  const m = createSandboxManager({
    driver,
    objects,
    sleepAfterMs: 60_000,
    resources,
    specFor: async (s): Promise<SandboxSpec> => ({ ...s, size: 'small', env: {}, proxyUrl: null }),
    onEvent: (e) => events.push(e),
    log,
    ...over,
  });
  managers.push(m);
  return m;
}

const ofType = (type: string, sessionId?: string) =>
  events.filter((e) => e.type === type && (!sessionId || e.sessionId === sessionId));
const states = (sessionId: string) => ofType('state', sessionId).map((e) => e.state);

describe('sandbox manager', () => {
  it('cold → warming-up → active on the first call; idle → snapshot → stop → cold; the next call restores /workspace', async () => {
    const m = manager({ sleepAfterMs: 400 });
    const s = session();
    expect(m.state(s.sessionId)).toBe('cold');
    await m.run(s, async (api) => {
      await api.writeFile('/workspace/project/notes.md', 'remember this\n');
      await api.exec({
        command: 'mkdir -p /workspace/project/empty && echo built > /workspace/project/out.txt',
      });
    });
    expect(m.state(s.sessionId)).toBe('active');
    // every call renews the idle timer
    for (let i = 0; i < 3; i++) {
      await new Promise((r) => setTimeout(r, 250));
      await m.run(s, (api) => api.ping());
      expect(m.state(s.sessionId)).toBe('active');
    }
    await expect.poll(() => m.state(s.sessionId), { timeout: 10_000 }).toBe('cold');
    expect(states(s.sessionId)).toEqual(['warming-up', 'active', 'stopping', 'cold']);
    const snap = ofType('snapshot', s.sessionId);
    expect(snap).toHaveLength(1);
    expect(snap[0]).toMatchObject({ reason: 'idle' });
    expect(snap[0]!.key).toMatch(
      /^snapshots\/tnt_a\/env_a\/sesn_[0-9_]+\/\d{8}T\d{6}\.\d{3}Z-[0-9a-f]+\.tar\.gz$/,
    );
    const pointer = await m.latestSnapshot(s);
    expect(pointer).toMatchObject({ key: snap[0]!.key, reason: 'idle' });
    expect(await objects.get(latestPointerKey(s))).not.toBeNull();
    expect(handles).toHaveLength(1);
    expect(await handles[0]!.exited).toEqual({ code: 0, signal: null });

    const text = await m.run(s, async (api) => {
      expect(
        (await api.exec({ command: 'cat project/out.txt; test -d project/empty && echo dir' }))
          .stdout,
      ).toBe('built\ndir\n');
      return (await api.readFile('/workspace/project/notes.md')).content;
    });
    expect(text).toBe('remember this\n');
    expect(handles).toHaveLength(2);
    expect(ofType('restore', s.sessionId)).toEqual([
      expect.objectContaining({ key: snap[0]!.key }),
    ]);
    expect(ofType('warmup', s.sessionId).map((e) => e.restored)).toEqual([null, snap[0]!.key]);
  });

  it('keepAlive holds an idle sandbox awake while the task lasts, at most maxKeepAliveMs', async () => {
    const m = manager({ sleepAfterMs: 200, maxKeepAliveMs: 1500 });
    const s = session();
    await m.run(s, (api) => api.ping());
    const t0 = Date.now();
    m.keepAlive(s, 'build', Date.now() + 3_600_000); // asks for an hour, capped
    await new Promise((r) => setTimeout(r, 900));
    expect(m.state(s.sessionId)).toBe('active');
    await expect.poll(() => m.state(s.sessionId), { timeout: 10_000 }).toBe('cold');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1400);

    // a task that ends (untilMs in the past) releases the sandbox to the normal idle timer
    const s2 = session();
    await m.run(s2, (api) => api.ping());
    m.keepAlive(s2, 'job', Date.now() + 60_000);
    await new Promise((r) => setTimeout(r, 500));
    expect(m.state(s2.sessionId)).toBe('active');
    m.keepAlive(s2, 'job', 0);
    await expect.poll(() => m.state(s2.sessionId), { timeout: 5_000 }).toBe('cold');
  });

  it('sandbox killed mid-call (SIGKILL of bwrap): the call fails, a snapshot is attempted, it comes back with its last snapshot', async () => {
    const m = manager({ sleepAfterMs: 400 });
    const s = session();
    await m.run(s, (api) => api.writeFile('/workspace/state.txt', 'v1\n'));
    await expect.poll(() => m.state(s.sessionId), { timeout: 10_000 }).toBe('cold');
    const firstSnapshot = (await m.latestSnapshot(s))!.key;

    await m.run(s, async (api) => {
      await api.writeFile('/workspace/state.txt', 'v2\n');
      await api.writeFile('/workspace/new.txt', 'after the snapshot\n');
    });
    const inFlight = m
      .run(s, (api) => api.exec({ command: 'sleep 30' }))
      .then(
        () => null,
        (e: unknown) => e as Error,
      );
    await new Promise((r) => setTimeout(r, 300));
    process.kill(handles.at(-1)!.pid, 'SIGKILL');
    const err = await inFlight;
    expect(err?.message).toMatch(/closed/);
    await expect.poll(() => m.state(s.sessionId), { timeout: 10_000 }).toBe('cold');
    expect(ofType('exit', s.sessionId)).toEqual([
      expect.objectContaining({ signal: 'SIGKILL', expected: false }),
    ]);
    expect(ofType('snapshot_failed', s.sessionId)).toEqual([
      expect.objectContaining({ reason: 'exit' }),
    ]);

    const after = await m.run(s, async (api) => ({
      state: (await api.readFile('/workspace/state.txt')).content,
      ls: (await api.exec({ command: 'ls /workspace' })).stdout,
    }));
    expect(after).toEqual({ state: 'v1\n', ls: 'state.txt\n' });
    expect((await m.latestSnapshot(s))!.key).toBe(firstSnapshot);
  });

  it('warm marker removed → the cached warmup resets and reruns before the next call', async () => {
    const m = manager();
    const s = session();
    await m.run(s, (api) => api.exec({ command: `test -s ${WARM_MARKER} && rm ${WARM_MARKER}` }));
    expect(ofType('warmup', s.sessionId)).toHaveLength(1);
    const marker = await m.run(s, async (api) => (await api.readFile(WARM_MARKER)).content);
    expect(JSON.parse(marker)).toMatchObject({ sandboxId: handles[0]!.id });
    expect(ofType('marker_missing', s.sessionId)).toHaveLength(1);
    expect(ofType('warmup', s.sessionId)).toHaveLength(2);
    expect(handles).toHaveLength(1); // same sandbox, warmed again
    await m.run(s, (api) => api.ping());
    expect(ofType('warmup', s.sessionId)).toHaveLength(2);
  });

  it('resources are written at warmup; one that cannot be prepared fails the warmup (never skipped)', async () => {
    const failing = new Set<string>();
    const m = manager({}, async (s) => [
      { path: '/mnt/session/uploads/data.csv', data: async () => Buffer.from('a,b\n1,2\n') },
      { path: '/workspace/.env.example', data: async () => Buffer.from('X=1\n') },
      ...(failing.has(s.sessionId)
        ? [
            {
              path: '/mnt/session/uploads/secret.bin',
              data: async () => {
                throw new Error('file store unavailable');
              },
            },
          ]
        : []),
    ]);
    const ok = session();
    expect(
      await m.run(ok, async (api) => (await api.readFile('/mnt/session/uploads/data.csv')).content),
    ).toBe('a,b\n1,2\n');

    const bad = session();
    failing.add(bad.sessionId);
    const err = await m
      .run(bad, async () => 'never')
      .then(
        () => null,
        (e: unknown) => e as Error & { step?: string; path?: string },
      );
    expect(err).toMatchObject({
      name: 'SandboxWarmupError',
      step: 'resources',
      path: '/mnt/session/uploads/secret.bin',
    });
    expect(err!.message).toContain('/mnt/session/uploads/secret.bin');
    expect(err!.message).toContain('file store unavailable');
    expect(m.state(bad.sessionId)).toBe('cold');
    expect(await handles.at(-1)!.exited).toBeDefined();
    // a half-warmed sandbox never writes a snapshot
    expect(await objects.list(`snapshots/tnt_a/env_a/${bad.sessionId}/`)).toEqual([]);

    // unwritable destination: also a failure
    const m2 = manager({}, async () => [
      { path: '/usr/lib/not-allowed', data: async () => Buffer.from('x') },
    ]);
    await expect(m2.run(session(), async () => 'never')).rejects.toThrow(/\/usr\/lib\/not-allowed/);
    // once fixed, the same session warms up
    failing.delete(bad.sessionId);
    expect(await m.run(bad, async () => 'now')).toBe('now');
  });

  it('destroy takes an eager snapshot, then destroys the sandbox', async () => {
    const m = manager();
    const s = session();
    await m.run(s, (api) => api.writeFile('/workspace/keep.txt', 'kept\n'));
    await m.destroy(s);
    expect(m.state(s.sessionId)).toBe('cold');
    expect(await m.latestSnapshot(s)).toMatchObject({ reason: 'destroy' });
    expect(ofType('snapshot', s.sessionId)).toEqual([
      expect.objectContaining({ reason: 'destroy' }),
    ]);
    await handles[0]!.exited;
    expect(existsSync(handles[0]!.hostDir)).toBe(false);
    expect(await m.run(s, async (api) => (await api.readFile('/workspace/keep.txt')).content)).toBe(
      'kept\n',
    );
  });

  it('syncOutputs copies the files in /mnt/session/outputs to outputs/<tenant>/<session>/<file> (nested ones skipped); stopping syncs them too', async () => {
    const m = manager({ sleepAfterMs: 400 });
    const s = session();
    await m.run(s, async (api) => {
      await api.writeFile('/mnt/session/outputs/report.md', '# report\n');
      await api.writeFile(
        '/mnt/session/outputs/charts/a.png',
        new Uint8Array([137, 80, 78, 71, 0, 1]),
      );
    });
    const report = await m.syncOutputs(s);
    expect(
      Buffer.from((await objects.get(`outputs/tnt_a/${s.sessionId}/report.md`))!).toString(),
    ).toBe('# report\n');
    // only files directly in the outputs directory are outputs: a nested one is skipped and reported
    expect(report.stored).toEqual(['report.md']);
    expect(report.skipped).toEqual([
      expect.objectContaining({ name: 'charts/a.png', reason: 'invalid_name' }),
    ]);
    expect(await objects.head(`outputs/tnt_a/${s.sessionId}/charts/a.png`)).toBeNull();
    await m.run(s, (api) => api.writeFile('/mnt/session/outputs/late.txt', 'late\n'));
    await expect.poll(() => m.state(s.sessionId), { timeout: 10_000 }).toBe('cold');
    expect(await objects.head(`outputs/tnt_a/${s.sessionId}/late.txt`)).toMatchObject({ size: 5 });
  });

  it('concurrent calls on a cold session queue behind one warmup', async () => {
    const m = manager();
    const s = session();
    const results = await Promise.all(
      [1, 2, 3, 4, 5].map((i) =>
        m.run(s, async (api) => (await api.exec({ command: `echo ${i}` })).stdout),
      ),
    );
    expect(results).toEqual(['1\n', '2\n', '3\n', '4\n', '5\n']);
    expect(handles).toHaveLength(1);
    expect(ofType('warmup', s.sessionId)).toHaveLength(1);
    // sessions never share a sandbox
    const other = session();
    await m.run(other, (api) => api.writeFile('/workspace/mine.txt', 'x'));
    expect(
      await m.run(s, async (api) => (await api.exec({ command: 'ls /workspace' })).stdout),
    ).toBe('');
    expect(handles).toHaveLength(2);
  });

  it('an idle stop whose snapshot cannot be written keeps the sandbox up and retries', async () => {
    let failPuts = true;
    const flaky: ObjectStore = {
      ...objects,
      put: (k, d, o) =>
        failPuts && k.startsWith('snapshots/')
          ? Promise.reject(new Error('store down'))
          : objects.put(k, d, o),
      putStream: (k, d, o) =>
        failPuts && k.startsWith('snapshots/')
          ? Promise.reject(new Error('store down'))
          : objects.putStream(k, d, o),
    };
    const m = manager({ sleepAfterMs: 300, objects: flaky });
    const s = session();
    await m.run(s, (api) => api.writeFile('/workspace/precious.txt', 'x'));
    await expect
      .poll(() => ofType('snapshot_failed', s.sessionId).length, { timeout: 10_000 })
      .toBeGreaterThan(0);
    expect(m.state(s.sessionId)).toBe('active');
    failPuts = false;
    await expect.poll(() => m.state(s.sessionId), { timeout: 10_000 }).toBe('cold');
    expect(await m.latestSnapshot(s)).toMatchObject({ reason: 'idle' });
  });

  it('close() snapshots and stops every active sandbox', async () => {
    const m = manager();
    const a = session();
    const b = session();
    await m.run(a, (api) => api.writeFile('/workspace/a', 'a'));
    await m.run(b, (api) => api.writeFile('/workspace/b', 'b'));
    await m.close();
    expect(await m.latestSnapshot(a)).toMatchObject({ reason: 'shutdown' });
    expect(await m.latestSnapshot(b)).toMatchObject({ reason: 'shutdown' });
    for (const h of handles) await h.exited;
    await expect(m.run(a, async () => 1)).rejects.toThrow(/closed/);
  });

  it('backups older than 7 days are swept, with pointers to them', async () => {
    const now = Date.UTC(2030, 0, 15, 12);
    const m = manager({ now: () => now });
    const s1 = session();
    const s2 = session();
    const old1 = snapshotKey(s1, now - BACKUP_TTL_MS - 60_000);
    const recent1 = snapshotKey(s1, now - BACKUP_TTL_MS + 60_000);
    const old2 = snapshotKey(s2, now - 30 * 24 * 3600_000);
    expect(snapshotTime(old1)).toBe(now - BACKUP_TTL_MS - 60_000);
    for (const k of [old1, recent1, old2]) await objects.put(k, Buffer.from('tgz'));
    await objects.put(latestPointerKey(s1), Buffer.from(JSON.stringify({ key: recent1 })));
    await objects.put(latestPointerKey(s2), Buffer.from(JSON.stringify({ key: old2 })));
    const { deleted } = await m.sweepBackups();
    expect(deleted.sort()).toEqual([latestPointerKey(s2), old1, old2].sort());
    expect((await objects.list('snapshots/')).map((o) => o.key).sort()).toEqual(
      [latestPointerKey(s1), recent1].sort(),
    );
    expect(await m.latestSnapshot(s2)).toBeNull();
    // a real snapshot, taken "now", survives a sweep now and goes 7 days later
    const s3 = session();
    await m.run(s3, (api) => api.writeFile('/workspace/x', 'x'));
    await m.destroy(s3);
    const fresh = (await m.latestSnapshot(s3))!.key;
    expect(snapshotTime(fresh)).toBe(now);
    expect((await m.sweepBackups(now)).deleted).toEqual([]);
    expect((await m.sweepBackups(now + BACKUP_TTL_MS + 1)).deleted.sort()).toEqual(
      [fresh, recent1, latestPointerKey(s1), latestPointerKey(s3)].sort(),
    );
    expect(await objects.list('snapshots/')).toEqual([]);
  });
});

describe('directory object store', () => {
  it('put/get/head/list/delete; atomic puts leave no temp files; keys validated', async () => {
    const root = join(dir, 'store');
    const store = createDirectoryObjectStore(root);
    await store.put('a/b/c.txt', Buffer.from('one'), { contentType: 'text/plain' });
    await store.put('a/b/c.txt', Buffer.from('two!'), { contentType: 'text/plain' });
    await store.put('a/d.bin', new Uint8Array([0, 1, 2]));
    await store.put('z', Buffer.from('z'));
    expect(Buffer.from((await store.get('a/b/c.txt'))!).toString()).toBe('two!');
    expect(await store.head('a/b/c.txt')).toMatchObject({
      key: 'a/b/c.txt',
      size: 4,
      contentType: 'text/plain',
    });
    expect(await store.head('a/d.bin')).not.toHaveProperty('contentType');
    expect(await store.get('nope')).toBeNull();
    expect(await store.get('a/b')).toBeNull(); // a prefix, not an object
    expect((await store.list('a/')).map((o) => o.key)).toEqual(['a/b/c.txt', 'a/d.bin']);
    expect((await store.list('a/b')).map((o) => o.key)).toEqual(['a/b/c.txt']);
    expect((await store.list('')).map((o) => o.key)).toEqual(['a/b/c.txt', 'a/d.bin', 'z']);
    expect(await readdir(join(root, 'tmp'))).toEqual([]);
    await store.delete('a/b/c.txt');
    await store.delete('a/b/c.txt');
    expect(await store.get('a/b/c.txt')).toBeNull();
    expect(existsSync(join(root, 'data', 'a', 'b'))).toBe(false);
    for (const bad of ['', '/abs', '../up', 'a/../b', 'a//b', './a', 'a\\b', 'a/.']) {
      await expect(store.put(bad, Buffer.from('x')), bad).rejects.toThrow(/invalid object key/);
      await expect(store.get(bad), bad).rejects.toThrow(/invalid object key/);
    }
    await expect(store.put('z/child', Buffer.from('x'))).rejects.toThrow(/conflicts/);
  });

  it('a reader sees the old object or the new one, never a part', async () => {
    const store = createDirectoryObjectStore(join(dir, 'store2'));
    const big = (c: number) => Buffer.alloc(2 * 1024 * 1024, c);
    await store.put('k', big(1));
    const writes = Promise.all([2, 3, 4, 5].map((c) => store.put('k', big(c))));
    const seen = new Set<string>();
    for (let i = 0; i < 40; i++) {
      const v = Buffer.from((await store.get('k'))!);
      expect(v.length).toBe(2 * 1024 * 1024);
      expect(v.every((b) => b === v[0])).toBe(true);
      seen.add(String(v[0]));
    }
    await writes;
  });
});
