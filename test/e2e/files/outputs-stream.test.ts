/**
 * Outputs stream through the server, measured on a real child process: a
 * 256 MiB output (zeros: tiny once gzipped, so the old whole-archive gunzip would have held all
 * of it) is synced after a turn and downloaded, and the server's peak RSS (VmHWM, a high-water
 * mark: no sampling, no timing) grows by far less than the file's size. The sparse 1 GiB case
 * and the warnings are in sandbox-tools.test.ts; the reader's limits in core/test/sandbox.outputs.test.ts.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../kit/fixtures/scriptedModel.js';
import { freePort, kill9, startProcess } from '../../kit/process.js';

const MIB = 1024 * 1024;
const OUTPUT_BYTES = 256 * MIB;

let model: ScriptedModelServer;
let dataDir: string;
beforeAll(async () => {
  model = await startScriptedModelServer({ defaultText: 'done' });
  dataDir = mkdtempSync(join(tmpdir(), 'agentfleet-outputs-'));
});
afterAll(async () => {
  await model?.close();
  // sandbox directories may stay busy a moment after the server stopped its sandboxes
  for (let i = 0; ; i++) {
    try {
      rmSync(dataDir, { recursive: true, force: true });
      break;
    } catch (err) {
      if (i >= 20) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
});

/** SIGTERM (the server stops its sandboxes), SIGKILL if it is not gone after 30 s. */
async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => void kill9(child), 30_000);
  await exited;
  clearTimeout(timer);
}

/** Peak resident set size of a process so far, in bytes. */
const peakRss = (pid: number) =>
  Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

describe('a large output streams through the server', () => {
  it("syncing and downloading a 256 MiB output raises the server's peak RSS by less than 128 MiB", async () => {
    const port = await freePort();
    const key = 'op-outputs-stream';
    const env = {
      PORT: String(port),
      DATA_DIR: dataDir,
      API_KEY: key,
      PLATFORM_ROOT_SECRET: 'outputs-stream-secret-0123456789abcdef',
      ANTHROPIC_API_KEY: 'sk-x',
      ANTHROPIC_BASE_URL: model.url,
      LOG_LEVEL: 'error',
      EGRESS_ALLOW_PRIVATE_HOSTS: new URL(model.url).host,
      OUTPUT_MAX_FILE_BYTES: String(512 * MIB),
      OUTPUT_MAX_SESSION_BYTES: String(1024 * MIB),
    };
    const base = `http://127.0.0.1:${port}`;
    const headers = {
      'x-api-key': key,
      'content-type': 'application/json',
      'anthropic-beta': 'managed-agents-2026-04-01',
    };
    const call = async (path: string, body?: unknown) => {
      const r = await fetch(`${base}${path}`, {
        method: body ? 'POST' : 'GET',
        headers,
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: r.status, body: (await r.json()) as any };
    };
    const turn = async (sid: string, text: string) => {
      const before = (await call(`/v1/sessions/${sid}/events?limit=1000`)).body.data.length;
      expect(
        (
          await call(`/v1/sessions/${sid}/events`, {
            events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
          })
        ).status,
      ).toBe(202);
      for (let i = 0; i < 600; i++) {
        const events = (await call(`/v1/sessions/${sid}/events?limit=1000`)).body.data as any[];
        if (events.length > before && events.at(-1).type === 'session.status_idle')
          return events.slice(before);
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new Error('the turn did not end');
    };
    const proc = await startProcess('all', env);
    try {
      const envId = (await call('/v1/environments', { name: 'e' })).body.id;
      const agentId = (
        await call('/v1/agents', {
          name: 'a',
          model: 'out-model',
          tools: [{ type: 'agent_toolset_20260401' }],
        })
      ).body.id;
      const sid = (await call('/v1/sessions', { agent: agentId, environment_id: envId })).body.id;
      // a first turn warms the sandbox and the server's code paths: the baseline includes them
      model.script(
        'out-model',
        {
          steps: [
            {
              tool_use: {
                name: 'bash',
                input: {
                  command:
                    'mkdir -p /mnt/session/outputs && echo small > /mnt/session/outputs/small.txt',
                },
              },
            },
          ],
        },
        { steps: [{ text: 'warm' }] },
      );
      await turn(sid, 'warm up');
      const baseline = peakRss(proc.child.pid!);

      model.script(
        'out-model',
        {
          steps: [
            {
              tool_use: {
                name: 'bash',
                input: {
                  command: `head -c ${OUTPUT_BYTES} /dev/zero > /mnt/session/outputs/zeros.bin && echo written`,
                },
              },
            },
          ],
        },
        { steps: [{ text: 'big' }] },
      );
      const events = await turn(sid, 'write a big output');
      expect(events.find((e) => e.type === 'agent.tool_result')).toMatchObject({ is_error: false });
      expect(events.filter((e) => e.type === 'session.warning')).toEqual([]);
      const list = (await call(`/v1/sessions/${sid}/outputs`)).body.data as any[];
      expect(list.map((o) => [o.filename, o.size_bytes])).toEqual([
        ['small.txt', 6],
        ['zeros.bin', OUTPUT_BYTES],
      ]);

      // the download streams too
      const res = await fetch(`${base}/v1/sessions/${sid}/outputs/zeros.bin`, { headers });
      expect(res.status).toBe(200);
      let received = 0;
      let nonZero = 0;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        received += chunk.length;
        if (chunk.some((b) => b !== 0)) nonZero++;
      }
      expect([received, nonZero]).toEqual([OUTPUT_BYTES, 0]);

      const growth = peakRss(proc.child.pid!) - baseline;
      expect(
        growth,
        `peak RSS grew ${(growth / MIB).toFixed(1)} MiB over ${(baseline / MIB).toFixed(1)} MiB`,
      ).toBeLessThan(128 * MIB);
    } finally {
      await stop(proc.child);
    }
  }, 180_000);
});
