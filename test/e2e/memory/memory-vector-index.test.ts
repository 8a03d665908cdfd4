/**
 * A memory store's `vector_index` (the spec's "index name") through the official TypeScript SDK
 * and HTTP: the platform names every store's index itself (served as `vector_index`, one index
 * per store), so a caller-chosen index is refused with a 400 naming `vector_index` and saying it
 * is not supported, on create and update, and nothing is stored; `null` is accepted
 * (core/src/api/unsupported.ts refuseVectorIndex).
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
});
afterAll(async () => {
  await t?.close();
});

async function refused(p: Promise<unknown>) {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Anthropic.BadRequestError);
  const msg = ((err as InstanceType<typeof Anthropic.BadRequestError>).error as any).error.message;
  expect(msg).toMatch(/^vector_index: .*is not supported/);
}

describe('memory store vector_index', () => {
  it('a chosen index is refused on create and update; the platform names one per store', async () => {
    const c = t.client.beta.memoryStores;
    const before = (await c.list()).data.length;
    await refused(c.create({ name: 'v', vector_index: 'shared-index' } as any));
    expect((await c.list()).data.length).toBe(before);

    const s: any = await c.create({ name: 'v', vector_index: null } as any);
    const other: any = await c.create({ name: 'w' });
    expect(s.vector_index).toMatch(/^memidx_/);
    expect(other.vector_index).toMatch(/^memidx_/);
    expect(other.vector_index).not.toBe(s.vector_index);
    await refused(c.update(s.id, { vector_index: other.vector_index } as any));
    expect(((await c.retrieve(s.id)) as any).vector_index).toBe(s.vector_index);

    // The spec's route, plain HTTP.
    const res = await t.http('/v1/memory_stores', {
      method: 'POST',
      headers: BETA,
      json: { name: 'v', vector_index: 'idx' },
    });
    expect(res.status).toBe(400);
    const body = (await res.json()) as any;
    expect(body.error.message).toMatch(/^vector_index: .*not supported/);
  });
});
