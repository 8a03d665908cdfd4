/**
 * DELETE /v1/sessions/:id and the session's sandbox (spec retention table):
 * - the snapshots already stored for the session are removed, and a live sandbox is destroyed
 *   without a new snapshot or output sync (SandboxManager.destroy with `discard`), so nothing of
 *   the deleted session's /workspace or outputs is left in the object store;
 * - a blob delete that fails is logged (tenant, session, object key) for reconciliation and the
 *   delete still answers 200, never a 5xx.
 * Real bubblewrap sandbox through the official TypeScript SDK; the failing delete comes from a
 * real directory object store wrapped to refuse one session's output keys.
 */
import { outputsPrefix, snapshotPrefix } from '@agentfleet/core';
import { createDirectoryObjectStore } from '@agentfleet/core/adapters';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { addModelCard, call, runTurn, say } from '../../kit/turnHelpers.js';

const MODEL = 'delete-sandbox-model';

async function addCard(t: TestPlatform, key: string) {
  await addModelCard(t, MODEL, { key });
}

describe('session delete removes the sandbox snapshots (local driver)', () => {
  let t: TestPlatform;
  beforeAll(async () => {
    t = await startPlatform({ env: { SANDBOX_DRIVER: 'local' } });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('stored snapshots go, and the live sandbox is destroyed without a new snapshot or output sync', async () => {
    const { tenantId, apiKey, client } = await t.newTenant('delete-sandbox');
    await addCard(t, apiKey);
    const env = await client.beta.environments.create({ name: 'delete-sandbox' });
    const agent = await client.beta.agents.create({
      name: 'delete-sandbox',
      model: MODEL,
      tools: [{ type: 'agent_toolset_20260401' }],
    });
    const sid = (await client.beta.sessions.create({ agent: agent.id, environment_id: env.id })).id;
    const ref = { tenantId, sessionId: sid, environmentId: env.id };
    t.model.script(
      MODEL,
      call('bash', {
        command:
          'echo kept > /workspace/w.txt && mkdir -p /mnt/session/outputs && echo out > /mnt/session/outputs/o.txt',
      }),
      say('first'),
    );
    await runTurn(client, sid, 'write');
    // A restart stops the sandbox with a shutdown snapshot: the session now has a stored backup.
    await t.restart();
    const objects = () => t.server.platform.objects;
    const snapshotsBefore = await objects().list(snapshotPrefix(ref));
    expect(snapshotsBefore.some((o) => o.key.endsWith('.tar.gz'))).toBe(true);
    expect((await objects().list(outputsPrefix(ref.tenantId, sid))).length).toBe(1);

    // The next turn restores it into a live sandbox and changes /workspace and the outputs.
    t.model.script(
      MODEL,
      call('bash', {
        command:
          'cat /workspace/w.txt && echo changed > /workspace/w.txt && echo again > /mnt/session/outputs/p.txt',
      }),
      say('second'),
    );
    const seen = (await runTurn(t.clientFor(apiKey), sid, 'again')).events;
    const result = seen.find((e) => e.type === 'agent.tool_result');
    expect(result?.content?.[0]?.text).toContain('kept');
    const manager = t.server.sandboxes!.manager;
    expect(manager.state(sid)).toBe('active');

    expect(await t.clientFor(apiKey).beta.sessions.delete(sid)).toMatchObject({ id: sid });
    await waitFor(async () => manager.state(sid) === 'cold', 30_000);
    expect(await objects().list(snapshotPrefix(ref))).toEqual([]);
    expect(await objects().list(outputsPrefix(ref.tenantId, sid))).toEqual([]);
  }, 120_000);
});

describe('session delete with a failing blob delete', () => {
  let t: TestPlatform;
  let dir: string;
  const refused: string[] = [];
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'agentfleet-objects-'));
    const real = createDirectoryObjectStore(dir);
    const objects = {
      ...real,
      async delete(key: string) {
        if (key.includes('/refuse-delete')) {
          refused.push(key);
          throw new Error('object store unavailable');
        }
        return real.delete(key);
      },
    };
    t = await startPlatform({
      env: { SANDBOX_DRIVER: 'none', LOG_LEVEL: 'warn' },
      overrides: { objects },
    });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers 200, deletes the rest and logs the failed key for reconciliation', async () => {
    const { tenantId, client } = await t.newTenant('blob-fail');
    const env = await client.beta.environments.create({ name: 'blob-fail' });
    const a = await client.beta.agents.create({ name: 'blob-fail', model: 'claude-sonnet-4-5' });
    const s = await client.beta.sessions.create({ agent: a.id, environment_id: env.id });
    const objects = t.server.platform.objects;
    const prefix = outputsPrefix(tenantId, s.id);
    await objects.put(`${prefix}refuse-delete.txt`, Buffer.from('stays'));
    await objects.put(`${prefix}fine.txt`, Buffer.from('goes'));

    const lines: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation(((chunk: unknown) => {
      lines.push(String(chunk));
      return true;
    }) as typeof process.stderr.write);
    let deleted;
    try {
      deleted = await client.beta.sessions.delete(s.id);
    } finally {
      spy.mockRestore();
    }
    expect(deleted).toMatchObject({ id: s.id, type: 'session_deleted' });
    expect(refused).toEqual([`${prefix}refuse-delete.txt`]);
    expect((await objects.list(prefix)).map((o) => o.key)).toEqual([`${prefix}refuse-delete.txt`]);
    const logged = lines
      .flatMap((l) => l.split('\n'))
      .filter(Boolean)
      .map((l) => JSON.parse(l))
      .filter((l) => String(l.msg).includes('left for reconciliation'));
    expect(logged).toEqual([
      expect.objectContaining({
        level: 'warn',
        tenant_id: tenantId,
        session_id: s.id,
        object_key: `${prefix}refuse-delete.txt`,
      }),
    ]);
  });
});
