/**
 * Shared set-up of the Work API tests (test/work-*.test.ts): a self_hosted environment, its
 * environment service key, an SDK client holding only that key (Bearer), a client holding a
 * claim's sessions token, and the decoded Work secret.
 */
import Anthropic from '@anthropic-ai/sdk';
import { BETA, type TestPlatform } from './harness.js';

export interface WorkEnv {
  envId: string;
  envKey: string;
  envKeyId: string;
  /** An SDK client authenticated only by the environment service key (Bearer). */
  worker: Anthropic;
  agentId: string;
}

/** What these helpers need of a platform: an in-process one, or one gateway of a fleet. */
export type WorkTarget = Pick<TestPlatform, 'url' | 'client' | 'operatorKey'>;

/** An SDK client whose only credential is `token`, sent as Authorization: Bearer. */
export const bearerClient = (t: Pick<TestPlatform, 'url'>, token: string) =>
  new Anthropic({ apiKey: null, authToken: token, baseURL: t.url, maxRetries: 0, timeout: 20_000 });

export async function workEnv(t: WorkTarget, name = 'work', client = t.client): Promise<WorkEnv> {
  const env = await client.beta.environments.create({ name, config: { type: 'self_hosted' } });
  const res = await fetch(`${t.url}/v1/svc/api_keys`, {
    method: 'POST',
    headers: {
      ...BETA,
      'content-type': 'application/json',
      'x-api-key': client.apiKey ?? t.operatorKey,
    },
    body: JSON.stringify({ name, environment_id: env.id }),
  });
  if (res.status !== 200) throw new Error(`key create: ${res.status} ${await res.text()}`);
  const key = (await res.json()) as { key: string; id: string };
  const agent = await client.beta.agents.create({ name, model: 'claude-sonnet-4-5' });
  return {
    envId: env.id,
    envKey: key.key,
    envKeyId: key.id,
    worker: bearerClient(t, key.key),
    agentId: agent.id,
  };
}

export const newSession = async (t: WorkTarget, w: WorkEnv, client = t.client) =>
  client.beta.sessions.create({ agent: w.agentId, environment_id: w.envId });

/** The `sessions_token` inside a Work `secret` (base64url JSON), as the SDK workers read it. */
export function sessionsToken(secret: string | null | undefined): string {
  if (!secret) throw new Error('no secret');
  const parsed = JSON.parse(Buffer.from(secret, 'base64url').toString('utf8')) as {
    sessions_token?: unknown;
  };
  if (typeof parsed.sessions_token !== 'string') throw new Error('secret without sessions_token');
  return parsed.sessions_token;
}

/** A raw request with the given bearer (no x-api-key). */
export const withBearer = (
  t: Pick<TestPlatform, 'url'>,
  token: string,
  path: string,
  init: RequestInit = {},
) =>
  fetch(`${t.url}${path}`, {
    ...init,
    headers: { ...BETA, authorization: `Bearer ${token}`, ...(init.headers ?? {}) },
  });
