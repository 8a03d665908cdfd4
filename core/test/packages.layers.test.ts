/**
 * The package layer cache across workers (core/src/sandbox/packages/layers.ts, wiring.ts): two
 * workers sharing one sandbox root and one lease store (the coordination port's embedded
 * adapter) asked for the same lists at once build the layer ONCE, under the lease, and both get
 * the same directory. Real builds: bubblewrap and PyPI (this machine resolves the registries to
 * a TEST-NET address, so the operator's EGRESS_ALLOW_PRIVATE_HOSTS opens exactly their names).
 * Within one worker, concurrent sessions share one build: test/e2e/environments/env-packages.test.ts.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { MemoryLeaseStore } from '../src/coordination/embedded.js';
import { createEgressPolicy, parsePrivateHostRules } from '../src/egress/policy.js';
import { createLogger } from '../src/log.js';
import { createPackageLayerService } from '../src/sandbox/packages/wiring.js';

const root = mkdtempSync(join(tmpdir(), 'agentfleet-layers-'));
const rules = parsePrivateHostRules('pypi.org,files.pythonhosted.org');
const leases = new MemoryLeaseStore();
const worker = () =>
  createPackageLayerService({
    rootDir: root,
    limits: false,
    hidePaths: [],
    egress: createEgressPolicy({ allowPrivateHosts: (rules as { rules: any }).rules }),
    log: createLogger('error'),
    leases,
  });
const a = worker();
const b = worker();

afterAll(async () => {
  await a.close();
  await b.close();
  rmSync(root, { recursive: true, force: true });
});

it('two workers asked for the same lists at once build the layer once, under the lease', async () => {
  const [da, db] = await Promise.all([a.layerFor({ pip: ['six'] }), b.layerFor({ pip: ['six'] })]);
  expect(da).not.toBeNull();
  expect(db).toBe(da);
  expect(a.builds + b.builds).toBe(1);
  const log = readFileSync(join(root, 'packages', 'builds.log'), 'utf8')
    .trim()
    .split('\n');
  expect(log).toHaveLength(1);
  expect(readdirSync(join(da!, 'python'))).toContain('six.py');
  expect(readdirSync(join(root, 'packages', '.staging'))).toEqual([]);
  // later asks are cache hits on either worker
  expect(await b.layerFor({ pip: ['six', 'six'] })).toBe(da);
  expect(a.builds + b.builds).toBe(1);
}, 180_000);
