/**
 * The local (bubblewrap) sandbox driver: the driver contract, plus what only the local driver
 * does (the proxy socket path, per-process limits, a crash of the bwrap process, bwrap missing,
 * the built-in tar), and the protocol client on its own. Needs `bwrap` (apt-get install bubblewrap).
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createLocalDriver,
  type LocalDriver,
  type LocalDriverOptions,
} from '../src/sandbox/drivers/bubblewrap/driver.js';
import {
  createAgentClient,
  createTarGz,
  parseTarGz,
  type AgentTransport,
} from '../src/sandbox/protocol.js';
import { archiveBytes, extractBytes, sandboxDriverContract, testSpec } from './sandbox.contract.js';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
let base: string;
let dataDir: string;

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'sbx-local-'));
  dataDir = join(base, 'data');
  await mkdir(dataDir, { recursive: true });
  await writeFile(join(dataDir, 'platform.secret'), 'do not show');
});
afterAll(async () => {
  await rm(base, { recursive: true, force: true });
});

let n = 0;
const newDriver = (extra: Partial<LocalDriverOptions> = {}): LocalDriver =>
  createLocalDriver({ rootDir: join(base, `root${n++}`), ...extra });

sandboxDriverContract('local', () => newDriver(), {
  hiddenHostPaths: () => [
    repoRoot,
    dataDir,
    join(dataDir, 'platform.secret'),
    base,
    '/root',
    '/etc/ssl/private',
    '/etc/shadow',
  ],
});

describe('local sandbox driver', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  });
  const track = <T extends { close(): Promise<void> }>(d: T) => {
    cleanups.push(() => d.close());
    return d;
  };

  it('refuses to start without bubblewrap, naming the package to install', async () => {
    const d = track(newDriver({ bwrap: '/nonexistent/bwrap' }));
    await expect(d.start(testSpec())).rejects.toThrow(/apt-get install bubblewrap/);
  });

  it('a per-sandbox host directory bound to /workspace, /tmp, /home/user, /mnt/session/outputs, removed on exit', async () => {
    const d = track(newDriver());
    const h = await d.start(testSpec());
    await h.api.writeFile('/workspace/w.txt', 'w');
    await h.api.writeFile('/home/user/h.txt', 'h');
    await h.api.writeFile('/mnt/session/outputs/o.txt', 'o');
    // with the disk limit, the sandbox's filesystem is detached from the host once it runs:
    // its files are only inside; without it, they are in the host directory
    const onHost = !h.confinement?.diskEnforced;
    expect(existsSync(join(h.hostDir, 'workspace', 'w.txt'))).toBe(onHost);
    expect(existsSync(join(h.hostDir, 'home', 'h.txt'))).toBe(onHost);
    expect(existsSync(join(h.hostDir, 'outputs', 'o.txt'))).toBe(onHost);
    expect(
      (
        await h.api.exec({
          command: 'cat /workspace/w.txt /home/user/h.txt /mnt/session/outputs/o.txt',
        })
      ).stdout,
    ).toBe('who');
    const env = (await h.api.exec({ command: 'echo $HOME; id -un; cat /proc/sys/kernel/hostname' }))
      .stdout;
    expect(env).toBe('/home/user\nuser\nsandbox\n');
    await h.stop();
    expect(await h.exited).toEqual({ code: 0, signal: null });
    await expect.poll(() => existsSync(h.hostDir)).toBe(false);
  });

  it('extra read-only binds; hidden paths inside bound trees are covered', async () => {
    const tools = join(base, `tools${n++}`);
    await mkdir(join(tools, 'bin'), { recursive: true });
    await mkdir(join(tools, 'secret'), { recursive: true });
    await writeFile(join(tools, 'bin', 'tool.sh'), 'echo tool\n');
    await writeFile(join(tools, 'secret', 'key'), 'k');
    await writeFile(join(tools, 'token'), 't');
    const d = track(
      newDriver({
        readOnlyBinds: [tools],
        hidePaths: [join(tools, 'secret'), join(tools, 'token')],
      }),
    );
    const h = await d.start(testSpec());
    cleanups.push(() => h.destroy());
    const r = await h.api.exec({
      command: `sh ${tools}/bin/tool.sh; ls -A ${tools}/secret; cat ${tools}/token; echo end; touch ${tools}/bin/x 2>/dev/null || echo read-only`,
    });
    expect(r.stdout).toBe('tool\nend\nread-only\n');
  });

  it('rejects a second sandbox for the same session and invalid specs', async () => {
    const d = track(newDriver());
    const spec = testSpec();
    const h = await d.start(spec);
    cleanups.push(() => h.destroy());
    await expect(d.start(spec)).rejects.toThrow(/already running/);
    await expect(d.start(testSpec({ sessionId: '../escape' }))).rejects.toThrow(/sessionId/);
    await expect(d.start(testSpec({ env: { HTTP_PROXY: 'http://evil' } }))).rejects.toThrow(
      /reserved/,
    );
  });

  it('SIGKILL of the bwrap process: exited reports the signal, pending calls are rejected as closed', async () => {
    const d = track(newDriver());
    const h = await d.start(testSpec());
    const call = h.api.exec({ command: 'sleep 30' }).then(
      () => null,
      (e: unknown) => e,
    );
    await new Promise((r) => setTimeout(r, 200));
    process.kill(h.pid, 'SIGKILL');
    expect(await h.exited).toEqual({ code: null, signal: 'SIGKILL' });
    expect(await call).toMatchObject({ kind: 'closed' });
    await expect.poll(() => existsSync(h.hostDir)).toBe(false);
  });

  it('per-sandbox limits from the instance size: process cap and memory in its cgroups, disk in its own filesystem', async () => {
    const d = track(newDriver());
    const small = await d.start(testSpec({ size: 'small' }));
    cleanups.push(() => small.destroy());
    const medium = await d.start(testSpec({ size: 'medium' }));
    cleanups.push(() => medium.destroy());
    expect(small.confinement!.cgroup!.processUsage()!.max).toBe(1024);
    expect(medium.confinement!.cgroup!.processUsage()!.max).toBe(2048);
    const memFile = (h: typeof small) => {
      const cg = h.confinement!.cgroup!;
      return join(
        cg.byController.memory!,
        cg.layout.version === 1 ? 'memory.limit_in_bytes' : 'memory.max',
      );
    };
    expect(readFileSync(memFile(small), 'utf8').trim()).toBe(String(4096 * 1024 * 1024));
    expect(readFileSync(memFile(medium), 'utf8').trim()).toBe(String(8192 * 1024 * 1024));
    const df = await small.api.exec({
      command: 'df -k /workspace /tmp /home/user /mnt/session/outputs | tail -n +2',
    });
    const rows = df.stdout
      .trim()
      .split('\n')
      .map((l) => l.split(/\s+/));
    expect(rows).toHaveLength(4);
    expect(new Set(rows.map((r) => r[0])).size).toBe(1); // one filesystem for the four
    expect(Number(rows[0][1])).toBeGreaterThan(3.5 * 1024 * 1024);
    expect(Number(rows[0][1])).toBeLessThanOrEqual(4096 * 1024);
  });

  it('outbound traffic goes through the proxy socket bound into the sandbox (HTTP_PROXY → 127.0.0.1:3128)', async () => {
    const socketPath = join(base, `proxy-${n++}.sock`);
    const seen: string[] = [];
    const proxy = createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.end(`proxied ${req.url}`);
    });
    await new Promise<void>((r) => proxy.listen(socketPath, r));
    cleanups.push(() => new Promise((r) => proxy.close(r)));
    let released = 0;
    const d = track(
      newDriver({ proxySocket: () => ({ path: socketPath, release: () => void released++ }) }),
    );
    const h = await d.start(testSpec());
    const env = await h.api.exec({ command: 'echo $HTTP_PROXY $https_proxy' });
    expect(env.stdout).toBe('http://127.0.0.1:3128 http://127.0.0.1:3128\n');
    const get = await h.api.exec({
      command: `node -e "require('http').get({host:'127.0.0.1',port:3128,path:'http://example.test/hello'},r=>{let b='';r.on('data',c=>b+=c);r.on('end',()=>console.log(r.statusCode,b))}).on('error',e=>console.log('error',e.code))"`,
      timeoutMs: 15_000,
    });
    expect(get.stdout).toBe('200 proxied http://example.test/hello\n');
    expect(seen).toEqual(['GET http://example.test/hello']);
    if (existsSync('/usr/bin/curl')) {
      const curl = await h.api.exec({
        command: 'curl -sS http://example.test/via-curl',
        timeoutMs: 15_000,
      });
      expect(curl.stdout).toBe('proxied http://example.test/via-curl');
    }
    await h.stop();
    await expect.poll(() => released).toBe(1);
  });

  it('the built-in tar (sandboxes without a tar CLI) reads and writes archives the tar CLI understands', async () => {
    const builtin = track(newDriver({ agentTar: 'builtin' }));
    const cli = track(newDriver());
    const a = await builtin.start(testSpec());
    const b = await cli.start(testSpec());
    cleanups.push(
      () => a.destroy(),
      () => b.destroy(),
    );
    const long = `${'d'.repeat(60)}/${'e'.repeat(60)}/${'f'.repeat(80)}.txt`;
    await a.api.writeFile(`/workspace/p/${long}`, 'long name\n');
    await a.api.writeFile('/workspace/p/x.sh', 'echo x\n', { mode: 0o750 });
    await a.api.exec({ command: 'mkdir p/empty && ln -s x.sh p/link' });
    const fromBuiltin = await archiveBytes(a.api, '/workspace/p');
    await extractBytes(b.api, '/workspace/q', fromBuiltin);
    expect(
      (
        await b.api.exec({
          command: `cat 'q/${long}' && stat -c %a q/x.sh && readlink q/link && test -d q/empty && echo ok`,
        })
      ).stdout,
    ).toBe('long name\n750\nx.sh\nok\n');
    const fromCli = await archiveBytes(b.api, '/workspace/q');
    await extractBytes(a.api, '/workspace/r', fromCli);
    expect(
      (
        await a.api.exec({
          command: `cat 'r/${long}' && stat -c %a r/x.sh && readlink r/link && test -d r/empty && echo ok`,
        })
      ).stdout,
    ).toBe('long name\n750\nx.sh\nok\n');
    // host-side helpers agree with both
    const names = parseTarGz(fromCli).map((e) => e.name);
    expect(names).toContain(long);
    await extractBytes(
      a.api,
      '/workspace/s',
      createTarGz([
        {
          name: 'made/on/host.txt',
          type: 'file',
          mode: 0o644,
          mtime: 0,
          data: Buffer.from('host\n'),
        },
      ]),
    );
    expect((await a.api.readFile('/workspace/s/made/on/host.txt')).content).toBe('host\n');
  });
});

describe('protocol client', () => {
  function fakeTransport() {
    const sent: string[] = [];
    let onLine: (l: string) => void = () => {};
    let onClose: (e?: Error) => void = () => {};
    const t: AgentTransport = {
      send: (l) => void sent.push(l),
      onLine: (l) => void (onLine = l),
      onClose: (l) => void (onClose = l),
      close: () => onClose(),
    };
    return {
      t,
      sent,
      reply: (l: unknown) => onLine(JSON.stringify(l)),
      end: (e?: Error) => onClose(e),
    };
  }

  it('numbers requests, matches answers by id, maps errors with their kind and path', async () => {
    const f = fakeTransport();
    const c = createAgentClient(f.t);
    const a = c.readFile('/workspace/a');
    a.catch(() => {});
    const b = c.exec({ command: 'true' });
    const [ra, rb] = f.sent.map((l) => JSON.parse(l));
    expect(ra).toMatchObject({
      jsonrpc: '2.0',
      method: 'readFile',
      params: { path: '/workspace/a' },
    });
    expect(rb).toMatchObject({ method: 'exec', params: { command: 'true' } });
    expect(ra.id).not.toBe(rb.id);
    const done = {
      exitCode: 0,
      signal: null,
      stdout: 'ok',
      stderr: '',
      timedOut: false,
      truncated: false,
      durationMs: 3,
    };
    f.reply({ jsonrpc: '2.0', id: rb.id, result: done });
    f.reply({
      jsonrpc: '2.0',
      id: ra.id,
      error: {
        code: -32001,
        message: 'readFile: /workspace/a: no such file or directory',
        data: { kind: 'not_found', path: '/workspace/a' },
      },
    });
    expect(await b).toEqual(done);
    await expect(a).rejects.toMatchObject({
      code: -32001,
      kind: 'not_found',
      data: { path: '/workspace/a' },
      message: expect.stringContaining('/workspace/a'),
    });
    const notes: string[] = [];
    c.onNotification((m) => notes.push(m));
    f.reply({ jsonrpc: '2.0', method: 'ready', params: {} });
    expect(notes).toEqual(['ready']);
  });

  it('rejects every pending call when the stream closes, and later calls at once', async () => {
    const f = fakeTransport();
    const c = createAgentClient(f.t);
    const calls: Promise<unknown>[] = [
      c.ping(),
      c.exec({ command: 'sleep 1' }),
      c.list('/workspace'),
    ];
    for (const p of calls) p.catch(() => {});
    expect(c.pending()).toBe(3);
    f.end(new Error('bwrap exited'));
    for (const p of calls)
      await expect(p).rejects.toMatchObject({
        kind: 'closed',
        message: expect.stringContaining('bwrap exited'),
      });
    expect(c.pending()).toBe(0);
    await expect(c.ping()).rejects.toMatchObject({ kind: 'closed' });
  });

  it('times calls out (exec after its own timeout plus a grace period)', async () => {
    const f = fakeTransport();
    const c = createAgentClient(f.t, { timeoutMs: 50, execGraceMs: 100 });
    const t0 = Date.now();
    await expect(c.ping()).rejects.toMatchObject({
      kind: 'timeout',
      message: expect.stringContaining('ping'),
    });
    await expect(c.exec({ command: 'x', timeoutMs: 100 })).rejects.toMatchObject({
      kind: 'timeout',
    });
    expect(Date.now() - t0).toBeGreaterThanOrEqual(240);
    expect(c.pending()).toBe(0);
  });
});
