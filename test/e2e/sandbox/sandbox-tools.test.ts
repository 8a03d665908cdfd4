import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toFile } from '@anthropic-ai/sdk';
import { createServer } from 'node:http';
import { BETA, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { startNomadFake } from '../../kit/nomad/fake.js';
import { snapshotPrefix } from '@agentfleet/core';

const MODEL = 'sandbox-model';

const call = (name: string, input: Record<string, unknown>) => ({
  steps: [{ tool_use: { name, input } }],
});
const say = (text: string) => ({ steps: [{ text }] });

/** The same behaviour through the platform with each sandbox driver (Nomad: against the Nomad API fake). */
describe.each(['local', 'nomad'] as const)(
  'sandboxes and the built-in toolset, through the SDK (%s driver)',
  (driver) => {
    let t: TestPlatform;
    let envId: string;
    let closeFake: (() => Promise<void>) | null = null;
    /** A local service for the custom http tool and web_fetch; the operator opens exactly its port. */
    const hits: Array<{ method: string; url: string; body: string }> = [];
    const origin = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        hits.push({ method: req.method!, url: req.url!, body });
        res.writeHead(200, {
          'content-type': req.url === '/page' ? 'text/html' : 'application/json',
        });
        res.end(
          req.url === '/page'
            ? '<html><body><h1>Hello page</h1><script>x()</script></body></html>'
            : JSON.stringify({ weather: 'sunny' }),
        );
      });
    });
    let port = 0;
    /** Another loopback service, NOT opened by the operator: nothing in a sandbox may reach it. */
    let internalHits = 0;
    const internal = createServer((_req, res) => {
      internalHits++;
      res.end('internal');
    });
    let internalPort = 0;
    beforeAll(async () => {
      await new Promise<void>((r) => origin.listen(0, '127.0.0.1', () => r()));
      port = (origin.address() as { port: number }).port;
      await new Promise<void>((r) => internal.listen(0, '127.0.0.1', () => r()));
      internalPort = (internal.address() as { port: number }).port;
      // Private addresses are refused whatever an environment allow-lists, unless the operator opens them.
      const env: Record<string, string> = {
        SANDBOX_SLEEP_AFTER_MS: '1500',
        SANDBOX_DRIVER: driver,
        EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${port}`,
      };
      if (driver === 'nomad') {
        // A node that fits several 1 vCPU / 4 GB sandboxes at once (this machine has 2 cores).
        const fake = await startNomadFake({ node: { cpuMhz: 16_000, memoryMb: 65_536 } });
        closeFake = fake.close;
        env.NOMAD_ADDR = fake.address;
        // The fake runs tasks on this machine: the session proxies listen on loopback TCP.
        env.SANDBOX_NOMAD_PROXY_ADVERTISE = '127.0.0.1';
      }
      t = await startPlatform({ env });
      await t.http('/v1/svc/model_cards', {
        method: 'POST',
        headers: BETA,
        json: {
          model_id: MODEL,
          provider: 'anthropic',
          model: MODEL,
          base_url: t.model.url,
          api_key: 'k',
        },
      });
      envId = (await t.client.beta.environments.create({ name: 'sandboxed' })).id;
    }, 60_000);
    afterAll(async () => {
      await t?.close();
      await closeFake?.();
      origin.closeAllConnections();
      await new Promise<void>((r) => origin.close(() => r()));
      await new Promise<void>((r) => internal.close(() => r()));
    });

    async function turn(sid: string, text: string) {
      const stream = await t.client.beta.sessions.events.stream(sid);
      await t.client.beta.sessions.events.send(sid, {
        events: [{ type: 'user.message', content: [{ type: 'text', text }] }],
      });
      const seen: any[] = [];
      for await (const ev of stream) {
        seen.push(ev);
        if (ev.type === 'session.status_idle') break;
      }
      const results = seen
        .filter((e) => e.type === 'agent.tool_result')
        .map((e) => ({ text: e.content[0].text as string, is_error: e.is_error as boolean }));
      return { seen, results };
    }

    describe('tools, isolation, lifecycle', () => {
      let sid: string;
      let fileId: string;

      it('runs bash, write, read, edit, glob and grep in the session sandbox with real results; files are mounted; outputs are durable', async () => {
        const agent = await t.client.beta.agents.create({
          name: 'tools',
          model: MODEL,
          tools: [{ type: 'agent_toolset_20260401' }],
        });
        sid = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId })).id;
        const uploaded = await t.client.beta.files.upload({
          file: await toFile(Buffer.from('uploaded content\n'), 'notes.txt'),
          session_id: sid,
        } as any);
        fileId = uploaded.id;
        t.model.script(
          MODEL,
          call('bash', {
            command:
              'mkdir -p /workspace/src && echo hello > /workspace/src/a.txt && cat /workspace/src/a.txt',
          }),
          call('write', { file_path: '/workspace/src/b.py', content: 'print(1)\nprint(2)\n' }),
          call('read', { file_path: '/workspace/src/b.py' }),
          call('edit', {
            file_path: '/workspace/src/b.py',
            old_string: 'print(2)',
            new_string: 'print(3)',
          }),
          call('glob', { pattern: '**/*.py', path: '/workspace' }),
          call('grep', { pattern: 'print\\(3\\)', path: '/workspace' }),
          call('bash', {
            command: `cat /home/user/files/${fileId}/notes.txt && mkdir -p /mnt/session/outputs && printf 'report body' > /mnt/session/outputs/report.txt`,
          }),
          call('edit', { file_path: '/workspace/src/b.py', old_string: 'absent', new_string: 'x' }),
          say('all done'),
        );
        const { results, seen } = await turn(sid, 'use the tools');
        expect(results.map((r) => r.is_error)).toEqual([
          false,
          false,
          false,
          false,
          false,
          false,
          false,
          true,
        ]);
        expect(results[0]!.text).toMatch(/^hello\n/);
        expect(results[1]!.text).toMatch(/wrote 18 bytes/);
        expect(results[2]!.text).toMatch(/1\tprint\(1\)\n\s+2\tprint\(2\)/);
        expect(results[3]!.text).toMatch(/replaced 1 occurrence/);
        expect(results[4]!.text).toBe('/workspace/src/b.py');
        expect(results[5]!.text).toBe('/workspace/src/b.py:2:print(3)');
        expect(results[6]!.text).toMatch(/^uploaded content\n/);
        expect(results[7]!.text).toMatch(/absent|not found/i); // a tool error is a result, never a dead turn
        expect(seen.at(-1).stop_reason).toEqual({ type: 'end_turn' });
        // The output is listed and downloaded (beta header), durable after the turn.
        const list = (await (
          await t.http(`/v1/sessions/${sid}/outputs`, { headers: BETA })
        ).json()) as any;
        expect(list.data.map((o: any) => o.filename)).toEqual(['report.txt']);
        const body = await (
          await t.http(`/v1/sessions/${sid}/outputs/report.txt`, { headers: BETA })
        ).text();
        expect(body).toBe('report body');
      });

      it('a file attached as a session resource is mounted at its mount_path', async () => {
        const f = await t.client.beta.files.upload({
          file: await toFile(Buffer.from('attached data\n'), 'input.txt'),
        } as any);
        const agent = await t.client.beta.agents.create({
          name: 'res',
          model: MODEL,
          tools: [{ type: 'agent_toolset_20260401' }],
        });
        const sess = await t.client.beta.sessions.create({
          agent: agent.id,
          environment_id: envId,
          resources: [{ type: 'file', file_id: f.id, mount_path: '/workspace/data/input.txt' }],
        });
        expect(sess.resources).toEqual([
          expect.objectContaining({
            type: 'file',
            file_id: f.id,
            mount_path: '/workspace/data/input.txt',
          }),
        ]);
        t.model.script(
          MODEL,
          call('bash', { command: 'cat /workspace/data/input.txt' }),
          say('read it'),
        );
        const { results } = await turn(sess.id, 'read the attachment');
        expect(results[0]).toMatchObject({ is_error: false });
        expect(results[0]!.text).toMatch(/^attached data\n/);
      });

      it("a second session cannot see the first one's files or processes", async () => {
        const agent = await t.client.beta.agents.create({
          name: 'other',
          model: MODEL,
          tools: [{ type: 'agent_toolset_20260401' }],
        });
        const other = (
          await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId })
        ).id;
        t.model.script(
          MODEL,
          call('bash', {
            command:
              'echo "ws:[$(ls -A /workspace)]"; echo "files:[$(ls -A /home/user/files 2>/dev/null)]"; echo "procs:$(ls /proc | grep -cE "^[0-9]+$")"; test -e /workspace/src/a.txt && echo visible || echo absent',
          }),
          say('looked'),
        );
        const { results } = await turn(other, 'look around');
        const out = results[0]!.text;
        expect(out).toContain('ws:[]');
        expect(out).toContain('files:[]');
        expect(out).toContain('\nabsent\n');
        const processes = Number(/procs:(\d+)/.exec(out)![1]);
        expect(processes).toBeLessThan(10); // its own agent, shell and tools only
      });

      it('custom tools with execution sandbox and http, and web_fetch, go through the sandbox and the session proxy', async () => {
        {
          // The environment allow-lists the host; the operator opened its port (EGRESS_ALLOW_PRIVATE_HOSTS).
          const env = await t.client.beta.environments.create({
            name: 'net',
            config: {
              type: 'cloud',
              networking: { type: 'limited', allowed_hosts: ['127.0.0.1'] },
            },
          });
          const agent = await t.client.beta.agents.create({
            name: 'custom',
            model: MODEL,
            tools: [
              { type: 'agent_toolset_20260401' },
              {
                type: 'custom',
                name: 'shout',
                description: 'upper-cases its input',
                input_schema: { type: 'object', properties: { word: { type: 'string' } } },
                execution: { type: 'sandbox', command: 'tr a-z A-Z' },
              },
              {
                type: 'custom',
                name: 'weather',
                description: 'weather service',
                input_schema: { type: 'object', properties: { city: { type: 'string' } } },
                execution: {
                  type: 'http',
                  endpoint: `http://127.0.0.1:${port}/weather`,
                  method: 'POST',
                },
              },
              {
                type: 'custom',
                name: 'internal',
                description: 'a loopback service the operator did not open',
                input_schema: { type: 'object', properties: {} },
                execution: {
                  type: 'http',
                  endpoint: `http://127.0.0.1:${internalPort}/secret`,
                  method: 'GET',
                },
              },
            ] as any,
          });
          const sess = (
            await t.client.beta.sessions.create({ agent: agent.id, environment_id: env.id })
          ).id;
          t.model.script(
            MODEL,
            call('shout', { word: 'hey' }),
            call('weather', { city: 'Oslo' }),
            call('web_fetch', { url: `http://127.0.0.1:${port}/page` }),
            call('web_fetch', { url: 'http://example.invalid/' }),
            call('internal', {}),
            call('web_fetch', { url: `http://127.0.0.1:${internalPort}/secret` }),
            say('ok'),
          );
          const { results } = await turn(sess, 'use custom tools');
          expect(results[0]).toEqual({ text: '{"WORD":"HEY"}', is_error: false });
          // Sent from the sandbox (curl), through the session's outbound proxy (Nomad: over TCP).
          expect(results[1]).toEqual({ text: '{"weather":"sunny"}', is_error: false });
          expect(hits.find((h) => h.url === '/weather')).toMatchObject({
            method: 'POST',
            body: '{"city":"Oslo"}',
          });
          expect(results[2]!.is_error).toBe(false);
          expect(results[2]!.text).toContain('Hello page');
          expect(results[2]!.text).not.toContain('x()');
          expect(results[3]!.is_error).toBe(true); // not in the allowlist: refused by the proxy
          // Allow-listed by the environment, but a private address the operator did not open: refused.
          expect(results[4]!.is_error).toBe(true);
          expect(results[5]!.is_error).toBe(true);
          expect(results[5]!.text).toContain('web_fetch refused');
          expect(internalHits).toBe(0);
        }
      });

      it('sleeps after the idle timeout (snapshot), and a later turn finds /workspace restored', async () => {
        const manager = t.server.sandboxes!.manager;
        // The first test's turn left it active; idle for SANDBOX_SLEEP_AFTER_MS (1.5 s) it snapshots and stops.
        await waitFor(async () => manager.state(sid) === 'cold', 15_000, 100);
        const snapshot = await manager.latestSnapshot({
          tenantId: 'tnt_default',
          sessionId: sid,
          environmentId: envId,
        });
        expect(snapshot?.reason).toBe('idle');
        t.model.script(
          MODEL,
          call('bash', { command: 'cat /workspace/src/a.txt /workspace/src/b.py' }),
          say('restored'),
        );
        const { results } = await turn(sid, 'are my files still there?');
        expect(results[0]!.text).toMatch(/^hello\nprint\(1\)\nprint\(3\)\n/);
      });

      it('a sandbox killed mid-turn comes back with its last snapshot', async () => {
        const manager = t.server.sandboxes!.manager;
        await waitFor(async () => manager.state(sid) === 'cold', 15_000, 100); // snapshot S2 holds a.txt and b.py
        t.model.script(
          MODEL,
          // Written after the last snapshot, then the sandbox's agent is killed (a crash).
          call('bash', {
            command: 'echo unsaved > /workspace/src/c.txt && kill -9 $PPID; sleep 5',
          }),
          call('bash', { command: 'ls /workspace/src' }),
          say('recovered'),
        );
        const { results } = await turn(sid, 'crash please');
        expect(results[0]!.is_error).toBe(true);
        expect(results[1]!.is_error).toBe(false);
        expect(results[1]!.text.split('\n')).toEqual(expect.arrayContaining(['a.txt', 'b.py']));
        expect(results[1]!.text).not.toContain('c.txt');
      });

      // The spec's runtime destroy takes an eager snapshot; a deleted session is never resumed,
      // so its destroy skips it and its stored snapshots are removed (docs/sandboxes.md, lifecycle).
      it('deleting the session destroys its sandbox without a snapshot and removes its snapshots', async () => {
        const manager = t.server.sandboxes!.manager;
        t.model.script(
          MODEL,
          call('bash', { command: 'echo last > /workspace/last.txt' }),
          say('wrote'),
        );
        await turn(sid, 'one more');
        expect(manager.state(sid)).toBe('active');
        await t.client.beta.sessions.delete(sid);
        await waitFor(async () => manager.state(sid) === 'cold', 15_000, 50);
        const snapshot = await manager.latestSnapshot({
          tenantId: 'tnt_default',
          sessionId: sid,
          environmentId: envId,
        });
        expect(snapshot).toBeNull();
        const objects = t.server.platform.objects;
        expect(
          await objects.list(
            snapshotPrefix({ tenantId: 'tnt_default', sessionId: sid, environmentId: envId }),
          ),
        ).toEqual([]);
      });

      it('outputs stream with caps: a sparse 1 GiB file and a name with a backslash are skipped with a session.warning naming each; the normal file is stored; the session goes on', async () => {
        const agent = await t.client.beta.agents.create({
          name: 'outputs',
          model: MODEL,
          tools: [{ type: 'agent_toolset_20260401' }],
        });
        const s = (await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId }))
          .id;
        t.model.script(
          MODEL,
          call('bash', {
            command:
              "mkdir -p /mnt/session/outputs && cd /mnt/session/outputs && truncate -s 1G zeros.bin && printf x > 'a\\b' && printf 'kept body' > normal.txt && ls",
          }),
          say('wrote three files'),
        );
        const first = await turn(s, 'write outputs');
        expect(first.results.map((r) => r.is_error)).toEqual([false]);
        expect(first.seen.at(-1).stop_reason).toEqual({ type: 'end_turn' });

        const list = (await (
          await t.http(`/v1/sessions/${s}/outputs`, { headers: BETA })
        ).json()) as any;
        expect(list.data.map((o: any) => [o.filename, o.size_bytes])).toEqual([['normal.txt', 9]]);
        expect(
          await (await t.http(`/v1/sessions/${s}/outputs/normal.txt`, { headers: BETA })).text(),
        ).toBe('kept body');
        expect(
          (await t.http(`/v1/sessions/${s}/outputs/zeros.bin`, { headers: BETA })).status,
        ).toBe(404);

        const events = ((await (await t.http(`/v1/sessions/${s}/events?limit=1000`)).json()) as any)
          .data as any[];
        const warnings = events.filter((e) => e.type === 'session.warning');
        expect(warnings.map((w) => [w.warning, w.filename, w.reason]).sort()).toEqual([
          ['output_skipped', 'a\\b', 'invalid_name'],
          ['output_skipped', 'zeros.bin', 'file_too_large'],
        ]);
        expect(warnings.find((w) => w.filename === 'zeros.bin').message).toMatch(
          /zeros\.bin.*1073741824 bytes/,
        );
        // the warnings come before the turn's idle event
        expect(events.at(-1).type).toBe('session.status_idle');

        // the session goes on, and the same skipped files are not reported again
        t.model.script(
          MODEL,
          call('bash', { command: 'echo more > /mnt/session/outputs/second.txt && echo ok' }),
          say('second turn'),
        );
        const second = await turn(s, 'one more');
        expect(second.results).toEqual([{ text: expect.stringMatching(/^ok\n/), is_error: false }]);
        const after = ((await (await t.http(`/v1/sessions/${s}/events?limit=1000`)).json()) as any)
          .data as any[];
        expect(after.filter((e) => e.type === 'session.warning')).toHaveLength(2);
        const names = (
          (await (await t.http(`/v1/sessions/${s}/outputs`, { headers: BETA })).json()) as any
        ).data.map((o: any) => o.filename);
        expect(names).toEqual(['normal.txt', 'second.txt']);
      });
    });
  },
);
