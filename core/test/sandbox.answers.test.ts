/**
 * The host trusts nothing a sandbox says: a hostile sandbox agent (this file's HOSTILE_AGENT, run
 * by the real local driver in a real bwrap sandbox in place of the platform's agent) answers
 * with a 300 MiB line, output over the call's cap, a line that is not JSON and an answer to a
 * request never sent. Each ends only that sandbox's call with a clear error (or, for the
 * output, is cut to the cap on the host), the host's RSS stays within 100 MB of where it
 * started, a well-behaved sandbox beside it keeps answering, and a protocol break stops the
 * hostile sandbox. What the client accepts per call: core/src/sandbox/answerLimits.ts.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalDriver, type LocalDriver } from '../src/sandbox/drivers/bubblewrap/driver.js';
import type { SandboxHandle } from '../src/sandbox/port.js';
import { testSpec } from './sandbox.contract.js';

/** Speaks the protocol on --channel-fd like the real agent, then misbehaves as each exec asks. */
const HOSTILE_AGENT = `
import * as net from 'node:net';
const fd = Number(process.argv[process.argv.indexOf('--channel-fd') + 1]);
const ch = new net.Socket({ fd, readable: true, writable: true });
const send = (m) => ch.write(JSON.stringify(m) + '\\n');
const result = (stdout) => ({ exitCode: 0, signal: null, stdout, stderr: '', timedOut: false, truncated: false, durationMs: 1 });
let buf = '';
ch.on('data', async (c) => {
  buf += c.toString();
  let nl;
  while ((nl = buf.indexOf('\\n')) >= 0) {
    const req = JSON.parse(buf.slice(0, nl));
    buf = buf.slice(nl + 1);
    const cmd = req.params?.command;
    if (cmd === 'oversize') {
      // one 300 MiB line, written with backpressure
      const head = '{"jsonrpc":"2.0","id":' + req.id + ',"result":{"stdout":"';
      ch.write(head);
      const mib = 'x'.repeat(1024 * 1024);
      for (let i = 0; i < 300; i++) if (!ch.write(mib)) await new Promise((r) => ch.once('drain', r));
      ch.write('"}}\\n');
    } else if (cmd === 'over-cap') send({ jsonrpc: '2.0', id: req.id, result: result('a'.repeat(500 * 1024)) });
    else if (cmd === 'junk') ch.write('this is not a protocol line\\n');
    else if (cmd === 'wrong-id') send({ jsonrpc: '2.0', id: 99999, result: result('forged') });
    else send({ jsonrpc: '2.0', id: req.id, result: result(String(cmd)) });
  }
});
send({ jsonrpc: '2.0', method: 'ready', params: { protocol: 2 } });
`;

let base: string;
let hostile: LocalDriver;
let honest: LocalDriver;
const handles: SandboxHandle[] = [];

beforeAll(async () => {
  base = await mkdtemp(join(tmpdir(), 'sbx-answers-'));
  const agentPath = join(base, 'hostile-agent.mjs');
  await writeFile(agentPath, HOSTILE_AGENT);
  hostile = createLocalDriver({ rootDir: join(base, 'hostile'), agentPath, limits: false });
  honest = createLocalDriver({ rootDir: join(base, 'honest'), limits: false });
});
afterAll(async () => {
  await Promise.all(handles.map((h) => h.destroy().catch(() => {})));
  await hostile?.close();
  await honest?.close();
  await rm(base, { recursive: true, force: true });
});

async function start(driver: LocalDriver): Promise<SandboxHandle> {
  const h = await driver.start(testSpec());
  handles.push(h);
  return h;
}

describe('a hostile sandbox agent', () => {
  it('a 300 MiB answer line: the call fails, the host holds none of it, the sandbox is stopped, another keeps answering', async () => {
    const h = await start(hostile);
    const other = await start(honest);
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    let peak = rssBefore;
    const sample = setInterval(() => {
      peak = Math.max(peak, process.memoryUsage().rss);
    }, 20);
    const attack = h.api.exec({ command: 'oversize' });
    attack.catch(() => {}); // asserted below, after the other sandbox answered
    // a well-behaved sandbox answers while the line streams in
    const beside = await other.api.exec({ command: 'echo beside' });
    expect(beside).toMatchObject({ exitCode: 0, stdout: 'beside\n' });
    await expect(attack).rejects.toMatchObject({
      kind: 'closed',
      message: expect.stringMatching(/line over the limit/),
    });
    clearInterval(sample);
    expect(peak - rssBefore).toBeLessThan(100 * 1024 * 1024);
    await h.exited; // stopped by the host
    expect((await other.api.exec({ command: 'echo after' })).stdout).toBe('after\n');
  }, 60_000);

  it('output over the call cap is cut on the host and marked truncated', async () => {
    const h = await start(hostile);
    const r = await h.api.exec({ command: 'over-cap' });
    expect(r.stdout.length).toBe(100 * 1024);
    expect(r.truncated).toBe(true);
    const small = await h.api.exec({ command: 'over-cap', maxOutputBytes: 50_000 });
    expect(small.stdout.length).toBe(50_000);
    // the sandbox still answers
    expect((await h.api.exec({ command: 'still' })).stdout).toBe('still');
    // an answer longer than its call may be is never read: the sandbox is stopped
    await expect(h.api.exec({ command: 'over-cap', maxOutputBytes: 1000 })).rejects.toMatchObject({
      kind: 'closed',
      message: expect.stringMatching(/line over the limit/),
    });
    await h.exited;
  });

  it('a line that is not JSON, or an answer to a request never sent, stops the sandbox', async () => {
    for (const command of ['junk', 'wrong-id']) {
      const h = await start(hostile);
      await expect(h.api.exec({ command })).rejects.toMatchObject({
        kind: 'closed',
        message: expect.stringMatching(/broke the protocol/),
      });
      await h.exited;
      await expect(h.api.exec({ command: 'again' })).rejects.toMatchObject({ kind: 'closed' });
    }
  });
});
