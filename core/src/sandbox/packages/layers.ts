/**
 * The package layer cache: one directory per content hash of the package lists
 * (`<cacheDir>/<hash>`, ./spec.ts packagesHash), shared by every environment (and environment
 * version) with the same lists.
 *
 * Guarantees:
 * - Built once: concurrent requests for one hash in this process wait for a single build
 *   (single-flight); a build fills a private staging directory that is renamed into place
 *   atomically only when complete, so a layer in the cache is never half-written, and workers
 *   racing on a shared cache keep whichever rename landed first.
 * - Across workers (processes or hosts) with `leases` (the coordination port): one build per
 *   hash at a time, under the lease `package-layer:<hash>` (renewed while the build runs; a dead
 *   builder's lease expires and another worker takes over); a worker that finds the lease held
 *   waits, then uses the layer if it landed in its cache, or builds it (a host of its own).
 * - A failed build leaves nothing in the cache; its error is remembered for `failureTtlMs`
 *   (default 60 s) so each tool call of a session does not rebuild a layer that cannot build.
 * - `builds` counts the builds this process started, and each build appends one line to
 *   `<cacheDir>/builds.log` (tests read it; a cache hit adds nothing).
 *
 * Tested: test/e2e/environments/env-packages.test.ts ("two sessions share one layer built once", "a
 * nonexistent package ends the sandbox start with session.error naming it").
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../log.js';
import type { LeaseStore } from '../../coordination/port.js';
import { sleep } from '../../util.js';
import { hasPackages, normalizePackageLists, packagesHash, type PackageLists } from './spec.js';

export interface PackageLayers {
  /** The host directory of the layer for `lists` (built if needed), or null when they are empty. */
  layerFor(lists: PackageLists | null | undefined): Promise<string | null>;
  /** Builds this process started. */
  readonly builds: number;
}

export interface PackageLayersOptions {
  cacheDir: string;
  /** Fills `stagingDir` (existing, empty) with the layer of `lists`, or throws. */
  build: (lists: PackageLists, stagingDir: string) => Promise<{ log: string }>;
  log: Logger;
  failureTtlMs?: number;
  /** Cross-worker single build (the coordination port's leases) and this worker's owner id. */
  leases?: { store: LeaseStore; owner: string };
}

const LEASE_TTL_MS = 60_000;

/** Runs `fn` holding the lease `key` (renewed while it runs); waits while another worker holds it. */
async function withBuildLease<T>(
  leases: PackageLayersOptions['leases'],
  key: string,
  done: () => boolean,
  fn: () => Promise<T>,
  onDone: () => T,
): Promise<T> {
  if (!leases) return fn();
  let lease = await leases.store.acquire(key, leases.owner, LEASE_TTL_MS);
  for (let wait = 250; !lease; wait = Math.min(wait * 2, 2000)) {
    if (done()) return onDone();
    await sleep(wait);
    lease = await leases.store.acquire(key, leases.owner, LEASE_TTL_MS);
  }
  const held = lease;
  const renew = setInterval(() => {
    void leases.store.renew(held, LEASE_TTL_MS).catch(() => false);
  }, LEASE_TTL_MS / 3);
  try {
    return done() ? onDone() : await fn();
  } finally {
    clearInterval(renew);
    await leases.store.release(held).catch(() => {});
  }
}

const MANIFEST = '.agentfleet-layer.json';

async function removeTree(p: string): Promise<void> {
  await fsp.chmod(p, 0o700).catch(() => {});
  await fsp.rm(p, { recursive: true, force: true, maxRetries: 2 }).catch(() => {});
}

export function createPackageLayers(o: PackageLayersOptions): PackageLayers {
  const inflight = new Map<string, Promise<string>>();
  const failures = new Map<string, { err: Error; until: number }>();
  const failureTtlMs = o.failureTtlMs ?? 60_000;
  let builds = 0;

  async function buildInto(hash: string, lists: PackageLists): Promise<string> {
    const dir = join(o.cacheDir, hash);
    const built = () => existsSync(join(dir, MANIFEST));
    return withBuildLease(
      o.leases,
      `package-layer:${hash}`,
      built,
      () => buildUnderLease(hash, lists, dir),
      () => dir,
    );
  }

  async function buildUnderLease(hash: string, lists: PackageLists, dir: string): Promise<string> {
    const stagingRoot = join(o.cacheDir, '.staging');
    await fsp.mkdir(stagingRoot, { recursive: true, mode: 0o700 });
    const staging = join(stagingRoot, `${hash}-${randomBytes(4).toString('hex')}`);
    await fsp.mkdir(staging, { mode: 0o755 });
    builds++;
    // one line per build started: the cache's own record of how often it built (tests count it)
    await fsp.appendFile(join(o.cacheDir, 'builds.log'), `${new Date().toISOString()} ${hash}\n`);
    const t0 = Date.now();
    o.log.info('building a package layer', { hash, packages: lists });
    try {
      const { log } = await o.build(lists, staging);
      await fsp.writeFile(
        join(staging, MANIFEST),
        `${JSON.stringify({ hash, packages: lists, builtAt: new Date().toISOString() })}\n`,
      );
      await fsp.writeFile(join(o.cacheDir, `${hash}.log`), log.slice(-256 * 1024));
      try {
        await fsp.rename(staging, dir);
      } catch (err) {
        // another worker's rename landed first: keep its layer
        if (!existsSync(join(dir, MANIFEST))) throw err;
        await removeTree(staging);
      }
      o.log.info('package layer built', { hash, durationMs: Date.now() - t0 });
      return dir;
    } catch (err) {
      await removeTree(staging);
      throw err;
    }
  }

  return {
    get builds() {
      return builds;
    },
    async layerFor(raw) {
      if (!hasPackages(raw)) return null;
      const lists = normalizePackageLists(raw);
      const hash = packagesHash(lists);
      const dir = join(o.cacheDir, hash);
      if (existsSync(join(dir, MANIFEST))) return dir;
      const failed = failures.get(hash);
      if (failed && failed.until > Date.now()) throw failed.err;
      let p = inflight.get(hash);
      if (!p) {
        p = buildInto(hash, lists)
          .catch((err: Error) => {
            failures.set(hash, { err, until: Date.now() + failureTtlMs });
            o.log.warn('package layer build failed', { hash, error: err.message });
            throw err;
          })
          .finally(() => inflight.delete(hash));
        inflight.set(hash, p);
      }
      return p;
    },
  };
}
