/**
 * Shared set-up of the GraphQL tests (graphql.test.ts over HTTP, graphql-subscriptions.test.ts
 * over graphql-sse): one in-process platform per test file with a cloud environment, queries
 * through POST /graphql, and a graphql-sse subscriber that collects events.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { createClient, type Client, type ExecutionResult } from 'graphql-sse';
import { startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
let envId: string;

/** Starts the platform (and its 'gql-env' environment) for the calling test file. */
export function useGraphqlPlatform(): () => { t: TestPlatform; envId: string } {
  beforeAll(async () => {
    t = await startPlatform();
    const env = await gql(
      `mutation($input: JSON!) { createEnvironment(input: $input) { id name config } }`,
      {
        input: { name: 'gql-env', config: { type: 'cloud', networking: { type: 'unrestricted' } } },
      },
    );
    envId = env.body.data.createEnvironment.id;
  });
  afterAll(async () => {
    await t?.close();
  });
  return () => ({ t, envId });
}

export const MODEL = 'claude-sonnet-4-5';
export const EVENT = 'id seq type sessionId createdAt data';
export const TURN = [
  'user.message',
  'session.status_running',
  'span.model_request_start',
  'agent.message',
  'span.model_request_end',
  'session.status_idle',
];

export async function gql(
  query: string,
  variables?: Record<string, unknown>,
  key: string | null = t.apiKey,
) {
  const res = await t.http('/graphql', { method: 'POST', key, json: { query, variables } });
  return { status: res.status, body: (await res.json()) as any };
}
/** The data of a query that must succeed. */
export async function ok(query: string, variables?: Record<string, unknown>, key?: string) {
  const r = await gql(query, variables, key);
  expect(r.body.errors, JSON.stringify(r.body.errors)).toBeUndefined();
  return r.body.data;
}

export async function newAgent(key?: string, system = 'v1') {
  return (
    await ok(
      `mutation($input: JSON!) { createAgent(input: $input) { id version system } }`,
      { input: { name: 'gql-agent', model: MODEL, system } },
      key,
    )
  ).createAgent;
}
export async function newSession(agentId: string, key?: string) {
  return (
    await ok(
      `mutation($input: JSON!) { createSession(input: $input) { id status agentVersion } }`,
      { input: { agent: agentId, environment_id: envId } },
      key,
    )
  ).createSession;
}
export const say = (sessionId: string, text: string, key?: string) =>
  ok(
    `mutation($s: ID!, $t: String) { sendMessage(sessionId: $s, text: $t) { ${EVENT} } }`,
    { s: sessionId, t: text },
    key,
  );
export async function allEvents(sessionId: string) {
  return (
    await ok(
      `query($s: ID!) { sessionEvents(sessionId: $s, limit: 1000) { nodes { ${EVENT} } } }`,
      { s: sessionId },
    )
  ).sessionEvents.nodes as any[];
}
/** Waits for the count-th session.status_idle in the log. */
export const untilIdle = (sessionId: string, count = 1) =>
  waitFor(async () => {
    const evs = await allEvents(sessionId);
    return evs.filter((e) => e.type === 'session.status_idle').length >= count ? evs : null;
  });

export function sseClient(key = t.apiKey, path = '/graphql/stream'): Client {
  return createClient({ url: `${t.url}${path}`, headers: { 'x-api-key': key }, retryAttempts: 0 });
}
export const SUBSCRIBE = `subscription($s: ID!, $after: Int) { sessionEvents(sessionId: $s, afterSeq: $after) { ${EVENT} } }`;

/** Subscribes; resolves `connected` once the server accepted the operation; collects until `until`. */
export function subscribe(
  client: Client,
  variables: Record<string, unknown>,
  until: (ev: any, all: any[]) => boolean,
  timeoutMs = 15_000,
) {
  let onConnected!: () => void;
  const connected = new Promise<void>((r) => {
    onConnected = r;
  });
  const it = client.iterate<{ sessionEvents: any }>(
    { query: SUBSCRIBE, variables },
    { connected: () => onConnected() },
  );
  const events = (async () => {
    const seen: any[] = [];
    const timer = setTimeout(() => void it.return?.(), timeoutMs);
    try {
      for await (const result of it as AsyncIterable<ExecutionResult<{ sessionEvents: any }>>) {
        if (result.errors) return { seen, errors: result.errors as any[] };
        seen.push(result.data!.sessionEvents);
        if (until(result.data!.sessionEvents, seen)) break;
      }
    } finally {
      clearTimeout(timer);
      await it.return?.();
    }
    return { seen, errors: undefined };
  })();
  return { connected, events };
}
export const idleCount = (n: number) => (_: any, all: any[]) =>
  all.filter((e) => e.type === 'session.status_idle').length >= n;

export function expectGapFree(evs: any[], from: number) {
  expect(evs.map((e) => e.seq)).toEqual(evs.map((_, i) => from + i));
}
