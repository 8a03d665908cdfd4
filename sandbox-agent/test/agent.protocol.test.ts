/**
 * The bundled sandbox agent as a real child process (no sandbox around it: what it does itself):
 * JSON-RPC errors for bad lines, unknown methods and missing arguments (each naming what is
 * wrong), the streamed archive/extract round trip with the tar CLI and with the built-in tar,
 * and exit when stdin ends.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { mkdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { lineSplitter } from '../src/lineSplitter.js';
import { sandboxProgram } from '../src/program.js';
import { parseTarGz } from '../src/tar.js';

const base = mkdtempSync(join(tmpdir(), 'agent-protocol-'));
afterAll(() => rmSync(base, { recursive: true, force: true }));

interface Agent {
  child: ChildProcessByStdio<Writable, Readable, null>;
  messages: Array<Record<string, any>>;
  sendLine(line: string): void;
  call(method: string, params?: unknown): Promise<Record<string, any>>;
  next(pred: (m: Record<string, any>) => boolean): Promise<Record<string, any>>;
}

const running: Agent[] = [];
afterEach(() => {
  for (const a of running.splice(0)) a.child.kill('SIGKILL');
});

async function startAgent(args: string[] = []): Promise<Agent> {
  const file = await sandboxProgram('agent', join(base, 'cache'));
  const child = spawn(process.execPath, [file, ...args], { stdio: ['pipe', 'pipe', 'inherit'] });
  const messages: Array<Record<string, any>> = [];
  const waiters: Array<() => void> = [];
  child.stdout.on(
    'data',
    lineSplitter((line) => {
      messages.push(JSON.parse(line));
      for (const w of waiters.splice(0)) w();
    }),
  );
  const next = (pred: (m: Record<string, any>) => boolean) =>
    new Promise<Record<string, any>>((resolve) => {
      const check = () => {
        const m = messages.find(pred);
        if (m) resolve(m);
        else waiters.push(check);
      };
      check();
    });
  let id = 0;
  const agent: Agent = {
    child,
    messages,
    next,
    sendLine: (line) => child.stdin.write(`${line}\n`),
    call: (method, params = {}) => {
      const n = ++id;
      child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id: n, method, params })}\n`);
      return next((m) => m.id === n);
    },
  };
  running.push(agent);
  await next((m) => m.method === 'ready');
  return agent;
}

describe('sandbox agent protocol (bundled agent as a child process)', () => {
  it('announces ready with the protocol version, answers ping', async () => {
    const a = await startAgent();
    expect(a.messages[0]).toMatchObject({ method: 'ready', params: { protocol: 2 } });
    expect(await a.call('ping')).toEqual({ jsonrpc: '2.0', id: 1, result: null });
  });

  it('bad lines, unknown methods and missing arguments get JSON-RPC errors naming them', async () => {
    const a = await startAgent();
    a.sendLine('not json');
    expect(await a.next((m) => m.error?.data?.kind === 'parse_error')).toMatchObject({
      id: null,
      error: { code: -32700 },
    });
    a.sendLine('{"id":7,"method":"ping"}');
    expect(await a.next((m) => m.id === 7)).toMatchObject({
      error: { code: -32600, data: { kind: 'invalid_request' } },
    });
    expect(await a.call('nope')).toMatchObject({
      error: { code: -32601, message: 'method not found: nope', data: { argument: 'method' } },
    });
    const missing = await a.call('readFile', {});
    expect(missing.error).toMatchObject({ code: -32602, data: { kind: 'invalid_params' } });
    expect(missing.error.data.argument).toBe('path');
    expect(missing.error.message).toContain("'path'");
    const absent = join(base, 'absent.txt');
    expect((await a.call('readFile', { path: absent })).error).toMatchObject({
      data: { kind: 'not_found', path: absent },
    });
  });

  for (const tar of ['cli', 'builtin'] as const) {
    it(`streamed archive and extract round trip (${tar} tar)`, async () => {
      const a = await startAgent(tar === 'builtin' ? ['--tar', 'builtin'] : []);
      expect(a.messages[0].params.tar).toBe(tar);
      const src = join(base, `src-${tar}`);
      mkdirSync(join(src, 'sub', 'empty'), { recursive: true });
      writeFileSync(join(src, 'sub', 'a.txt'), 'hello\n');
      writeFileSync(join(src, 'run.sh'), 'echo run\n', { mode: 0o750 });
      symlinkSync('run.sh', join(src, 'link'));
      const opened = await a.call('archiveOpen', { dir: src });
      const stream = opened.result.stream as string;
      const parts: Buffer[] = [];
      for (let eof = false; !eof;) {
        const r = (await a.call('streamRead', { stream })).result;
        parts.push(Buffer.from(r.base64, 'base64'));
        eof = r.eof;
      }
      const tgz = Buffer.concat(parts);
      const names = parseTarGz(tgz).map((e) => `${e.type}:${e.name.replace(/^\.\//, '')}`);
      expect(names).toEqual(
        expect.arrayContaining(['file:sub/a.txt', 'file:run.sh', 'symlink:link']),
      );
      const dest = join(base, `dest-${tar}`);
      const ex = (await a.call('extractOpen', { dir: dest })).result.stream as string;
      expect(
        (await a.call('streamWrite', { stream: ex, base64: tgz.toString('base64') })).result,
      ).toBeNull();
      expect((await a.call('streamEnd', { stream: ex })).result).toBeNull();
      expect(readFileSync(join(dest, 'sub', 'a.txt'), 'utf8')).toBe('hello\n');
      expect(statSync(join(dest, 'run.sh')).mode & 0o777).toBe(0o750);
      expect(readlinkSync(join(dest, 'link'))).toBe('run.sh');
      expect(statSync(join(dest, 'sub', 'empty')).isDirectory()).toBe(true);
    });
  }

  it('exits when its stdin ends', async () => {
    const a = await startAgent();
    const exited = new Promise<number | null>((resolve) => a.child.once('exit', resolve));
    a.child.stdin.end();
    expect(await exited).toBe(0);
  });
});
