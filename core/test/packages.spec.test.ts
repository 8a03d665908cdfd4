/**
 * Package names and layer hashes (core/src/sandbox/packages/spec.ts): the names each manager
 * accepts and refuses (400 naming the field), and the content hash that lets environments with
 * the same lists share a layer. End to end (builds, mounts): test/e2e/environments/env-packages.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { ApiError } from '../src/errors.js';
import {
  packagesHash,
  validatePackageLists,
  type PackageLists,
} from '../src/sandbox/packages/spec.js';
import { installScript } from '../src/sandbox/packages/builders.js';

const refusal = (lists: unknown, field = 'packages') => {
  try {
    validatePackageLists(lists, field);
    return null;
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  }
};

describe('package names', () => {
  it('accepts the usual names and versions of every manager', () => {
    const ok: PackageLists = {
      pip: [
        'six',
        'requests==2.31.0',
        'requests[security]>=2.0,<3',
        'zope.interface',
        'Django~=4.2',
      ],
      npm: ['left-pad', '@types/node', 'is-odd@3.0.1', 'lodash@^4.17.0', 'typescript@~5.4'],
      apt: [
        'hello',
        'libssl-dev',
        'g++',
        'python3.11',
        'curl=7.88.1-10+deb12u5',
        'tzdata=1:2024a-0',
      ],
      cargo: ['ripgrep', 'ripgrep@14.1.0', 'cargo-edit'],
      gem: ['rake', 'rake:13.0.6', 'net-http'],
      go: ['golang.org/x/example/hello@latest', 'github.com/rakyll/hey@v0.1.4', 'mvdan.cc/gofumpt'],
    };
    expect(refusal(ok)).toBeNull();
    expect(refusal({ type: 'packages', pip: [] })).toBeNull();
    expect(refusal(null)).toBeNull();
  });

  it('refuses options, URLs, paths, shell syntax, bad lengths and counts, naming the field', () => {
    const cases: Array<[unknown, string]> = [
      [{ pip: ['--index-url=http://evil'] }, 'packages.pip[0]'],
      [{ pip: ['six', '-r requirements.txt'] }, 'packages.pip[1]'],
      [{ pip: ['./local'] }, 'packages.pip[0]'],
      [{ pip: ['https://evil/x.whl'] }, 'packages.pip[0]'],
      [{ npm: ['file:../x'] }, 'packages.npm[0]'],
      [{ npm: ['@scope/../../x'] }, 'packages.npm[0]'],
      [{ npm: ['a b'] }, 'packages.npm[0]'],
      [{ apt: ['-o=APT::Get::foo'] }, 'packages.apt[0]'],
      [{ apt: ['$(id)'] }, 'packages.apt[0]'],
      [{ cargo: ['--git=https://evil'] }, 'packages.cargo[0]'],
      [{ gem: ['rake`id`'] }, 'packages.gem[0]'],
      [{ go: ['-toolexec=/bin/sh'] }, 'packages.go[0]'],
      [{ go: ['example.com/a/../b'] }, 'packages.go[0]'],
      [{ go: ['nodots/x@v1'] }, 'packages.go[0]'],
      [{ pip: ['x'.repeat(215)] }, 'packages.pip[0]'],
      [{ pip: [''] }, 'packages.pip[0]'],
      [{ pip: [42] }, 'packages.pip[0]'],
      [{ pip: Array.from({ length: 65 }, (_, i) => `p${i}`) }, 'packages.pip'],
      [{ brew: ['x'] }, 'packages.brew'],
      [{ pip: 'six' }, 'packages.pip'],
    ];
    for (const [lists, field] of cases) {
      const err = refusal(lists);
      expect(err, JSON.stringify(lists)).not.toBeNull();
      expect(err!.status).toBe(400);
      expect(
        err!.message.startsWith(`${field}:`) || err!.message.includes(field),
        err!.message,
      ).toBe(true);
    }
  });
});

describe('layer hash', () => {
  it('depends on the lists only: order and duplicates do not matter, content does', () => {
    const a = packagesHash({ pip: ['six', 'requests'], npm: ['is-odd'] });
    expect(packagesHash({ npm: ['is-odd'], pip: ['requests', 'six', 'six'], apt: [] })).toBe(a);
    expect(packagesHash({ pip: ['six', 'requests'], npm: ['is-even'] })).not.toBe(a);
    expect(packagesHash({ pip: ['six', 'requests==2.31.0'], npm: ['is-odd'] })).not.toBe(a);
    expect(packagesHash({ npm: ['six', 'requests'], pip: ['is-odd'] })).not.toBe(a);
    expect(a).toMatch(/^[0-9a-f]{32}$/);
  });
});

describe('install scripts', () => {
  it('quote every name and end options before the names', () => {
    const s = installScript('pip', ["it's"], { rustToolchain: null });
    expect(s).toContain(`--target /opt/agentfleet/packages/python -- 'it'\\''s'`);
    expect(installScript('npm', ['is-odd'], { rustToolchain: null })).toContain(`-- 'is-odd'`);
  });
});
