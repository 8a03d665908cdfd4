/**
 * Behaviours every SandboxDriver must show (local bubblewrap, Nomad), through the protocol its
 * sandboxes speak: exec (timeouts kill the process group, output caps), the file operations,
 * archive/extract, isolation between sandboxes (files, processes), no network, and stop.
 *
 * `makeDriver` is called once per test; everything a test starts is destroyed after it and the
 * driver closed. `hiddenHostPaths` (optional) lists host paths that must not exist inside a
 * sandbox (the repo, the data dir, the driver's own directory); `spec` overrides spec fields.
 */
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type {
  SandboxAgentApi,
  SandboxDriver,
  SandboxHandle,
  SandboxSpec,
} from '../src/sandbox/port.js';
import { parseTarGz } from '../src/sandbox/protocol.js';

/** A directory's tar.gz through the streaming path (archiveStream), as one buffer. */
export async function archiveBytes(api: SandboxAgentApi, dir: string): Promise<Buffer> {
  const { data } = await api.archiveStream(dir);
  const chunks: Buffer[] = [];
  for await (const c of data) chunks.push(Buffer.from(c as Uint8Array));
  return Buffer.concat(chunks);
}

/** Unpacks a tar.gz into a directory through the streaming path (extractStream). */
export function extractBytes(api: SandboxAgentApi, dir: string, tgz: Uint8Array): Promise<void> {
  return api.extractStream(
    dir,
    (async function* () {
      yield tgz;
    })(),
  );
}

export interface SandboxDriverContractOptions {
  hiddenHostPaths?: () => string[];
  spec?: Partial<SandboxSpec>;
}

let seq = 0;
export const testSpec = (over: Partial<SandboxSpec> = {}): SandboxSpec => ({
  tenantId: 'tnt_test',
  environmentId: 'env_test',
  sessionId: `sesn_${process.pid}_${Date.now().toString(36)}_${seq++}`,
  size: 'small',
  env: {},
  proxyUrl: null,
  ...over,
});

/** Command lines of every process the sandbox can see (no `ps` needed). */
export async function processList(api: SandboxAgentApi): Promise<string> {
  const r = await api.exec({
    command: "for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done",
  });
  return r.stdout;
}

async function expectAgentError(
  p: Promise<unknown>,
  kind: string,
  mentions: string,
): Promise<void> {
  const err = await p.then(
    () => null,
    (e: unknown) => e as { kind?: string; message?: string },
  );
  expect(err, `expected a ${kind} error`).not.toBeNull();
  expect(err!.kind).toBe(kind);
  expect(err!.message).toContain(mentions);
}

export function sandboxDriverContract(
  name: string,
  makeDriver: () => Promise<SandboxDriver> | SandboxDriver,
  options: SandboxDriverContractOptions = {},
): void {
  describe(`sandbox driver contract: ${name}`, () => {
    const cleanups: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
    });

    const driver = async () => {
      const d = await makeDriver();
      cleanups.push(() => d.close());
      return d;
    };
    const start = async (
      d: SandboxDriver,
      over: Partial<SandboxSpec> = {},
    ): Promise<SandboxHandle> => {
      const h = await d.start(testSpec({ ...options.spec, ...over }));
      cleanups.push(() => h.destroy());
      return h;
    };

    it('exec: exit code, stdout and stderr, default cwd /workspace, env, stdin', async () => {
      const h = await start(await driver(), { env: { GREETING: 'hello' } });
      await h.api.ping();
      const r = await h.api.exec({
        command: 'pwd; echo "$GREETING $EXTRA"; echo oops >&2; cat; exit 3',
        env: { EXTRA: 'there' },
        stdin: 'from stdin',
      });
      expect(r).toMatchObject({ exitCode: 3, signal: null, timedOut: false, truncated: false });
      expect(r.stdout).toBe('/workspace\nhello there\nfrom stdin');
      expect(r.stderr).toBe('oops\n');
      expect(r.durationMs).toBeGreaterThanOrEqual(0);
      const sub = await h.api.exec({ command: 'mkdir -p sub && cd sub && pwd' });
      expect(sub.stdout).toBe('/workspace/sub\n');
      expect((await h.api.exec({ command: 'pwd', cwd: '/workspace/sub' })).stdout).toBe(
        '/workspace/sub\n',
      );
      await expectAgentError(
        h.api.exec({ command: 'true', cwd: '/workspace/none' }),
        'not_found',
        '/workspace/none',
      );
    });

    it('exec: a timeout kills the whole process group', async () => {
      const h = await start(await driver());
      const t0 = Date.now();
      const r = await h.api.exec({
        command: 'sleep 31 & sleep 32 & sleep 33; echo never',
        timeoutMs: 600,
      });
      expect(Date.now() - t0).toBeLessThan(5000);
      expect(r.timedOut).toBe(true);
      expect(r.exitCode).toBeNull();
      expect(r.signal).toBe('SIGKILL');
      expect(r.stdout).not.toContain('never');
      const ps = await processList(h.api);
      expect(ps).not.toMatch(/sleep 3[123]/);
    });

    it('exec: a background process does not hold the call; output is capped per stream', async () => {
      const h = await start(await driver());
      const t0 = Date.now();
      const bg = await h.api.exec({ command: 'sleep 20 & echo started' });
      expect(bg.stdout).toBe('started\n');
      expect(Date.now() - t0).toBeLessThan(3000);
      const big = await h.api.exec({
        command: "head -c 300000 /dev/zero | tr '\\0' a; head -c 5000 /dev/zero | tr '\\0' b >&2",
        maxOutputBytes: 1000,
      });
      expect(big.exitCode).toBe(0);
      expect(big.stdout).toBe('a'.repeat(1000));
      expect(big.stderr).toBe('b'.repeat(1000));
      expect(big.truncated).toBe(true);
      const def = await h.api.exec({ command: "head -c 200000 /dev/zero | tr '\\0' c" });
      expect(def.stdout.length).toBe(100 * 1024);
      expect(def.truncated).toBe(true);
      const small = await h.api.exec({ command: 'echo ok', maxOutputBytes: 1000 });
      expect(small).toMatchObject({ stdout: 'ok\n', truncated: false });
    });

    it('readFile and writeFile: line windows, parents created, modes, binary refused, errors name the path', async () => {
      const h = await start(await driver());
      const { api } = h;
      await api.writeFile('/workspace/deep/er/notes.txt', 'one\ntwo\nthree\nfour\n');
      expect(await api.readFile('/workspace/deep/er/notes.txt')).toEqual({
        content: 'one\ntwo\nthree\nfour\n',
        totalLines: 4,
      });
      expect(await api.readFile('/workspace/deep/er/notes.txt', { offset: 2, limit: 2 })).toEqual({
        content: 'two\nthree',
        totalLines: 4,
      });
      expect(await api.readFile('/workspace/deep/er/notes.txt', { offset: 4 })).toEqual({
        content: 'four\n',
        totalLines: 4,
      });
      expect(await api.readFile('/workspace/deep/er/notes.txt', { offset: 9 })).toEqual({
        content: '',
        totalLines: 4,
      });
      await api.writeFile('/workspace/empty.txt', '');
      expect(await api.readFile('/workspace/empty.txt')).toEqual({ content: '', totalLines: 0 });
      await api.writeFile('/workspace/run.sh', '#!/bin/sh\necho ran\n', { mode: 0o755 });
      expect((await api.exec({ command: './run.sh' })).stdout).toBe('ran\n');
      await api.writeFile('/workspace/blob.bin', new Uint8Array([0, 1, 2, 255, 0]));
      expect((await api.exec({ command: 'od -An -tu1 blob.bin | tr -s " "' })).stdout.trim()).toBe(
        '0 1 2 255 0',
      );
      await expectAgentError(
        api.readFile('/workspace/blob.bin'),
        'binary_file',
        '/workspace/blob.bin',
      );
      await expectAgentError(
        api.readFile('/workspace/missing.txt'),
        'not_found',
        '/workspace/missing.txt',
      );
      await expectAgentError(api.readFile('/workspace/deep'), 'is_directory', '/workspace/deep');
      await expectAgentError(
        api.writeFile('/usr/forbidden.txt', 'x'),
        'permission_denied',
        '/usr/forbidden.txt',
      );
      await api.writeFile('/workspace/utf.txt', 'héllo wörld ✓\n');
      expect((await api.readFile('/workspace/utf.txt')).content).toBe('héllo wörld ✓\n');
    });

    it('edit: exact replacement, missing and ambiguous strings refused, replaceAll', async () => {
      const { api } = await start(await driver());
      await api.writeFile('/workspace/a.js', 'const a = 1;\nconst b = 1;\nlet c = a + b;\n');
      expect(await api.edit('/workspace/a.js', 'let c', 'const c')).toEqual({ replacements: 1 });
      await expectAgentError(
        api.edit('/workspace/a.js', 'nothing like this', 'x'),
        'no_match',
        '/workspace/a.js',
      );
      await expectAgentError(
        api.edit('/workspace/a.js', '= 1;', '= 2;'),
        'not_unique',
        '/workspace/a.js',
      );
      expect(await api.edit('/workspace/a.js', '= 1;', '= 2;', true)).toEqual({ replacements: 2 });
      // the replacement is literal: no `$&` patterns
      expect(await api.edit('/workspace/a.js', 'const c', '$& /* $1 */')).toEqual({
        replacements: 1,
      });
      expect((await api.readFile('/workspace/a.js')).content).toBe(
        'const a = 2;\nconst b = 2;\n$& /* $1 */ = a + b;\n',
      );
      await expectAgentError(
        api.edit('/workspace/nope.js', 'a', 'b'),
        'not_found',
        '/workspace/nope.js',
      );
    });

    it('glob: **, *, ?, braces, dotfiles only when named, absolute and relative patterns', async () => {
      const { api } = await start(await driver());
      for (const f of [
        'src/a.ts',
        'src/b.ts',
        'src/c.js',
        'src/deep/d.ts',
        'src/deep/deeper/e.ts',
        'x1.md',
        'x22.md',
        '.hidden/h.ts',
        'src/.dot.ts',
      ]) {
        await api.writeFile(`/workspace/${f}`, f);
      }
      expect(await api.glob('**/*.ts')).toEqual([
        '/workspace/src/a.ts',
        '/workspace/src/b.ts',
        '/workspace/src/deep/d.ts',
        '/workspace/src/deep/deeper/e.ts',
      ]);
      expect(await api.glob('src/*.ts')).toEqual(['/workspace/src/a.ts', '/workspace/src/b.ts']);
      expect(await api.glob('x?.md')).toEqual(['/workspace/x1.md']);
      expect(await api.glob('src/*.{js,ts}')).toEqual([
        '/workspace/src/a.ts',
        '/workspace/src/b.ts',
        '/workspace/src/c.js',
      ]);
      expect(await api.glob('/workspace/src/deep/**/*.ts')).toEqual([
        '/workspace/src/deep/d.ts',
        '/workspace/src/deep/deeper/e.ts',
      ]);
      expect(await api.glob('*.ts', '/workspace/src')).toEqual([
        '/workspace/src/a.ts',
        '/workspace/src/b.ts',
      ]);
      expect(await api.glob('.hidden/*.ts')).toEqual(['/workspace/.hidden/h.ts']);
      expect(await api.glob('src/.*.ts')).toEqual(['/workspace/src/.dot.ts']);
      expect(await api.glob('src/deep/**')).toEqual([
        '/workspace/src/deep',
        '/workspace/src/deep/d.ts',
        '/workspace/src/deep/deeper',
        '/workspace/src/deep/deeper/e.ts',
      ]);
      expect(await api.glob('nothing/**/*.rs')).toEqual([]);
    });

    it('grep: JS regular expressions, line numbers, glob filter, binary files skipped, match cap', async () => {
      const { api } = await start(await driver());
      await api.writeFile(
        '/workspace/src/one.ts',
        'import x from "y";\n// TODO: first\nconst todo = 1;\n',
      );
      await api.writeFile('/workspace/src/two.js', 'TODO in js\n');
      await api.writeFile('/workspace/bin.dat', new Uint8Array([84, 79, 68, 79, 0, 1]));
      await api.writeFile('/workspace/node_modules/dep/index.js', 'TODO vendored\n');
      expect(await api.grep('TODO')).toEqual([
        { path: '/workspace/src/one.ts', line: 2, text: '// TODO: first' },
        { path: '/workspace/src/two.js', line: 1, text: 'TODO in js' },
      ]);
      expect(await api.grep('(?i)todo', '/workspace/src', { glob: '*.ts' })).toEqual([
        { path: '/workspace/src/one.ts', line: 2, text: '// TODO: first' },
        { path: '/workspace/src/one.ts', line: 3, text: 'const todo = 1;' },
      ]);
      expect(await api.grep('^import \\w+', '/workspace/src/one.ts')).toEqual([
        { path: '/workspace/src/one.ts', line: 1, text: 'import x from "y";' },
      ]);
      expect(await api.grep('.', '/workspace/src', { maxMatches: 2 })).toHaveLength(2);
      await expectAgentError(api.grep('(unclosed', '/workspace'), 'invalid_params', 'pattern');
      await expectAgentError(api.grep('x', '/workspace/absent'), 'not_found', '/workspace/absent');
    });

    it('archive and extract: a tar.gz of a directory (files, modes, symlinks, empty dirs) and its inverse; list', async () => {
      const { api } = await start(await driver());
      await api.writeFile('/workspace/proj/readme.md', '# hi\n');
      await api.writeFile('/workspace/proj/bin/tool', '#!/bin/sh\necho tool\n', { mode: 0o755 });
      await api.writeFile(
        '/workspace/proj/data.bin',
        new Uint8Array(70_000).map((_, i) => i % 256),
      );
      await api.exec({ command: 'mkdir -p proj/empty && ln -s readme.md proj/link.md' });
      const tgz = await archiveBytes(api, '/workspace/proj');
      const names = parseTarGz(tgz)
        .map((e) => `${e.type}:${e.name}`)
        .sort();
      expect(names).toEqual(
        expect.arrayContaining([
          'file:readme.md',
          'file:bin/tool',
          'file:data.bin',
          'directory:empty',
          'symlink:link.md',
        ]),
      );
      await extractBytes(api, '/workspace/copy', tgz);
      const check = await api.exec({
        command:
          'cd copy && cat readme.md && ./bin/tool && readlink link.md && test -d empty && cmp data.bin ../proj/data.bin && echo same',
      });
      expect(check.stdout).toBe('# hi\ntool\nreadme.md\nsame\n');
      expect(await api.list('/workspace/copy')).toEqual([
        { name: 'bin', size: 0, isDirectory: true },
        { name: 'data.bin', size: 70_000, isDirectory: false },
        { name: 'empty', size: 0, isDirectory: true },
        { name: 'link.md', size: 5, isDirectory: false },
        { name: 'readme.md', size: 5, isDirectory: false },
      ]);
      await expectAgentError(archiveBytes(api, '/workspace/none'), 'not_found', '/workspace/none');
      await expectAgentError(api.list('/workspace/none'), 'not_found', '/workspace/none');
    });

    it("isolation: a second sandbox sees neither the first one's files nor its processes", async () => {
      const d = await driver();
      const a = await start(d);
      const b = await start(d);
      await a.api.writeFile('/workspace/secret.txt', 'only a');
      await a.api.writeFile('/tmp/a-tmp.txt', 'only a');
      await a.api.exec({ command: 'nohup sleep 313 >/dev/null 2>&1 &' });
      expect(await processList(a.api)).toContain('sleep 313');
      expect(await processList(b.api)).not.toContain('sleep 313');
      expect((await b.api.exec({ command: 'ls -A /workspace /tmp' })).stdout).not.toMatch(
        /secret|a-tmp/,
      );
      await expectAgentError(
        b.api.readFile('/workspace/secret.txt'),
        'not_found',
        '/workspace/secret.txt',
      );
      // b's process table holds only its own few processes: pid 1 and the agent, plus the probe
      const pids = (await b.api.exec({ command: 'ls -d /proc/[0-9]* | wc -l' })).stdout.trim();
      expect(Number(pids)).toBeLessThan(10);
      expect((await b.api.exec({ command: 'id -u' })).stdout).not.toBe('0\n');
    });

    it('network: nothing outside the sandbox is reachable (not the host loopback, not the internet)', async () => {
      const server: Server = createServer((s) => s.end('host service\n'));
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
      const port = (server.address() as { port: number }).port;
      const { api } = await start(await driver());
      const probe = (host: string, p: number) =>
        api.exec({
          command: `node -e "const s=require('net').connect(${p},'${host}');s.setTimeout(3000,()=>{console.log('timeout');process.exit(0)});s.on('connect',()=>{console.log('connected');process.exit(0)});s.on('error',e=>{console.log(e.code);process.exit(0)})"`,
          timeoutMs: 15_000,
        });
      const local = await probe('127.0.0.1', port);
      expect(local.stdout.trim()).toMatch(/ECONNREFUSED|timeout/);
      const internet = await probe('1.1.1.1', 80);
      expect(internet.stdout.trim()).not.toBe('connected');
      const ifaces = await api.exec({ command: 'cat /proc/net/dev' });
      expect(
        ifaces.stdout
          .split('\n')
          .filter((l) => l.includes(':'))
          .map((l) => l.split(':')[0]!.trim()),
      ).toEqual(['lo']);
    });

    it('host paths (repo, data dir, other sandboxes) are not visible', async () => {
      const paths = options.hiddenHostPaths?.() ?? [];
      const { api } = await start(await driver());
      for (const p of paths) {
        const r = await api.exec({ command: `test -e '${p}' && echo visible || echo hidden` });
        expect(`${p}: ${r.stdout.trim()}`).toBe(`${p}: hidden`);
      }
      const etc = (await api.exec({ command: 'ls /etc' })).stdout.split('\n');
      for (const secret of ['shadow', 'gshadow', 'sudoers', 'ssh', 'machine-id'])
        expect(etc).not.toContain(secret);
    });

    it('stop: exited resolves, pending and later calls are rejected as closed', async () => {
      const h = await start(await driver());
      const pending = h.api.exec({ command: 'sleep 30' }).then(
        () => null,
        (e: unknown) => e,
      );
      await new Promise((r) => setTimeout(r, 200));
      await h.stop();
      const r = await h.exited;
      expect(r).toHaveProperty('code');
      expect(await pending).toMatchObject({ kind: 'closed' });
      await expect(h.api.ping()).rejects.toMatchObject({ kind: 'closed' });
    });
  });
}
