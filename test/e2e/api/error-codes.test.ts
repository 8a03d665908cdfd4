/**
 * The SDK's typed errors: wherever the official SDKs define an `error_code`, the error body
 * carries it in `error.details.error_code`, so the TypeScript SDK's `APIError.errorCode` fires
 * (core/src/errors.ts, gateway/src/http.ts errorBody). The spec's error `type` stays as it is.
 * Not covered here: `file_expired` (set on expired files' reads; an expiry needs at least the
 * minimum `expires_in_seconds` to pass, and tests do not wait).
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
});
afterAll(() => t?.close());

async function failure(p: Promise<unknown>): Promise<InstanceType<typeof Anthropic.APIError>> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(Anthropic.APIError);
    return err as InstanceType<typeof Anthropic.APIError>;
  }
  throw new Error('expected the call to fail');
}

describe('details.error_code through the TypeScript SDK', () => {
  it('environment_archived: updating an archived environment or starting a session on it', async () => {
    const c = t.client;
    const env = await c.beta.environments.create({ name: 'ec-archived' });
    const agent = await c.beta.agents.create({ name: 'ec', model: 'claude-sonnet-4-5' });
    await c.beta.environments.archive(env.id);
    const upd = await failure(c.beta.environments.update(env.id, { description: 'x' }));
    expect(upd).toBeInstanceOf(Anthropic.BadRequestError);
    expect(upd.errorCode).toBe('environment_archived');
    expect(upd.type).toBe('invalid_request');
    const s = await failure(c.beta.sessions.create({ agent: agent.id, environment_id: env.id }));
    expect(s.errorCode).toBe('environment_archived');
  });

  it('environment_not_found: retrieving an unknown environment or starting a session on it', async () => {
    const c = t.client;
    const get = await failure(c.beta.environments.retrieve('env_doesnotexist'));
    expect(get).toBeInstanceOf(Anthropic.NotFoundError);
    expect(get.errorCode).toBe('environment_not_found');
    const agent = await c.beta.agents.create({ name: 'ec2', model: 'claude-sonnet-4-5' });
    const s = await failure(
      c.beta.sessions.create({ agent: agent.id, environment_id: 'env_doesnotexist' }),
    );
    expect(s.errorCode).toBe('environment_not_found');
  });

  it('invalid_config_type_change: an environment config cannot change type', async () => {
    const env = await t.client.beta.environments.create({
      name: 'ec-config',
      config: { type: 'cloud' },
    } as any);
    const err = await failure(
      t.client.beta.environments.update(env.id, { config: { type: 'self_hosted' } } as any),
    );
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err.errorCode).toBe('invalid_config_type_change');
  });

  it('invalid_metadata: too many keys, or a bad key or value, on any resource', async () => {
    const many = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, 'v']));
    const agent = await failure(
      t.client.beta.agents.create({ name: 'm', model: 'claude-sonnet-4-5', metadata: many }),
    );
    expect(agent).toBeInstanceOf(Anthropic.BadRequestError);
    expect(agent.errorCode).toBe('invalid_metadata');
    const env = await t.client.beta.environments.create({ name: 'ec-meta' });
    const upd = await failure(
      t.client.beta.environments.update(env.id, { metadata: { k: 'x'.repeat(100_000) } }),
    );
    expect(upd.errorCode).toBe('invalid_metadata');
  });

  it('errors without an SDK code carry none', async () => {
    const err = await failure(t.client.beta.agents.retrieve('agent_doesnotexist'));
    expect(err).toBeInstanceOf(Anthropic.NotFoundError);
    expect(err.errorCode).toBeNull();
  });
});
