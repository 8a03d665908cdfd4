import { beforeAll, describe, expect, it } from 'vitest';
import { createClient } from 'graphql-sse';
import type { TestPlatform } from '../../kit/harness.js';
import {
  expectGapFree,
  idleCount,
  MODEL,
  newAgent,
  newSession,
  say,
  sseClient,
  SUBSCRIBE,
  subscribe,
  TURN,
  untilIdle,
  useGraphqlPlatform,
  allEvents,
} from './graphqlHelpers.js';

const platform = useGraphqlPlatform();
let t: TestPlatform;
beforeAll(() => {
  ({ t } = platform());
});

describe('GraphQL subscriptions over graphql-sse', () => {
  it('delivers a turn live, in seq order, ending with session.status_idle', async () => {
    const a = await newAgent();
    const s = await newSession(a.id);
    t.model.script(MODEL, {
      steps: [
        { thinking: 'hmm', signature: 'sig' },
        { text: 'Live over SSE', chunks: 4 },
      ],
    });
    const client = sseClient();
    try {
      const sub = subscribe(client, { s: s.id }, (ev) => ev.type === 'session.status_idle');
      await sub.connected;
      await say(s.id, 'stream this');
      const { seen, errors } = await sub.events;
      expect(errors).toBeUndefined();
      expect(seen.map((e) => e.type)).toEqual([
        'user.message',
        'session.status_running',
        'span.model_request_start',
        'agent.thinking',
        'agent.message',
        'span.model_request_end',
        'session.status_idle',
      ]);
      expectGapFree(seen, 1);
      expect(seen.every((e) => e.sessionId === s.id)).toBe(true);
      expect(seen.find((e) => e.type === 'agent.message').data.content).toEqual([
        { type: 'text', text: 'Live over SSE' },
      ]);
      // The same events the log holds.
      expect(seen).toEqual(await allEvents(s.id));
    } finally {
      client.dispose();
    }
  });

  it('replays seq > afterSeq first, then the live events, with no duplicates or gaps', async () => {
    const a = await newAgent();
    const s = await newSession(a.id);
    await say(s.id, 'first');
    const history = await untilIdle(s.id);
    expect(history).toHaveLength(6);
    const client = sseClient();
    try {
      const sub = subscribe(client, { s: s.id, after: 2 }, idleCount(2));
      await sub.connected;
      t.model.script(MODEL, { steps: [{ delay_ms: 200 }, { text: 'second answer' }] });
      await say(s.id, 'second');
      const { seen, errors } = await sub.events;
      expect(errors).toBeUndefined();
      expectGapFree(seen, 3);
      expect(seen.slice(0, 4)).toEqual(history.slice(2));
      expect(seen.slice(4).map((e) => e.type)).toEqual(TURN);
      expect(seen).toEqual((await allEvents(s.id)).slice(2));
    } finally {
      client.dispose();
    }
  });

  it('serves subscriptions on /graphql with Accept: text/event-stream, and in single-connection mode', async () => {
    const a = await newAgent();
    const s = await newSession(a.id);
    await say(s.id, 'before');
    const history = await untilIdle(s.id);
    const distinct = sseClient(t.apiKey, '/graphql');
    const single = createClient({
      url: `${t.url}/graphql/stream`,
      headers: { 'x-api-key': t.apiKey },
      retryAttempts: 0,
      singleConnection: true,
    });
    try {
      const viaGraphql = await subscribe(
        distinct,
        { s: s.id, after: 0 },
        (_, all) => all.length === history.length,
      ).events;
      expect(viaGraphql.seen).toEqual(history);
      const replayed: any[] = [];
      for await (const r of single.iterate<{ sessionEvents: any }>({
        query: SUBSCRIBE,
        variables: { s: s.id, after: 3 },
      })) {
        expect(r.errors).toBeUndefined();
        replayed.push(r.data!.sessionEvents);
        if (replayed.length === history.length - 3) break;
      }
      expect(replayed).toEqual(history.slice(3));
    } finally {
      distinct.dispose();
      single.dispose();
    }
  });
});
