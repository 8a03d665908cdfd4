import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BETA, readSse, startPlatform, waitFor, type TestPlatform } from '../../kit/harness.js';
import { json, sessionHelpers } from '../../kit/sessionHelpers.js';

let t: TestPlatform;
let envId: string;
beforeAll(async () => {
  t = await startPlatform();
  envId = (await t.client.beta.environments.create({ name: 'ev' })).id;
});
afterAll(async () => {
  await t?.close();
});

const { agentWithModel, say, untilIdle } = sessionHelpers(() => t);

describe('sessions', () => {
  it('creates with the spec body and the SDK body; lists with filters; derived status', async () => {
    const { agent, model } = await agentWithModel();
    const spec = await json(
      await t.http('/v1/sessions', {
        method: 'POST',
        json: { agent: agent.id, environment_id: envId, title: 'spec' },
      }),
    );
    expect(spec.status).toBe(200);
    expect(spec.body).toMatchObject({
      agent_id: agent.id,
      agent_version: 1,
      status: 'idle',
      title: 'spec',
    });
    const sdk = await t.client.beta.sessions.create({
      agent: { type: 'agent', id: agent.id },
      environment_id: envId,
      metadata: { k: 'v' },
    });
    expect(sdk.metadata).toEqual({ k: 'v' });
    t.model.script(model, { steps: [{ delay_ms: 1500 }, { text: 'slow' }] });
    await say(sdk.id, 'go');
    await waitFor(async () => (await t.client.beta.sessions.retrieve(sdk.id)).status === 'running');
    const running = await json(await t.http(`/v1/sessions?agent_id=${agent.id}&status=running`));
    expect(running.body.data.map((s: any) => s.id)).toEqual([sdk.id]);
    const idle = [];
    for await (const s of t.client.beta.sessions.list({ agent_id: agent.id, statuses: ['idle'] }))
      idle.push(s.id);
    expect(idle).toEqual([spec.body.id]);
    await untilIdle(sdk.id);
    expect((await t.client.beta.sessions.retrieve(sdk.id)).status).toBe('idle');
  });

  it('updates title/metadata, archives, deletes softly (404 after, events gone), rejects events when terminated', async () => {
    const { agent } = await agentWithModel();
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    const u = await t.client.beta.sessions.update(s.id, { title: 'renamed', metadata: { a: '1' } });
    expect(u.title).toBe('renamed');
    await say(s.id, 'hello');
    await untilIdle(s.id);
    const arch = await t.client.beta.sessions.archive(s.id);
    expect(arch.archived_at).toBeTruthy();
    await expect(say(s.id, 'more')).rejects.toMatchObject({ status: 400 });
    const del = await t.client.beta.sessions.delete(s.id);
    expect(del).toEqual({ id: s.id, type: 'session_deleted' });
    await expect(t.client.beta.sessions.retrieve(s.id)).rejects.toMatchObject({ status: 404 });
    expect((await t.http(`/v1/sessions/${s.id}/events`)).status).toBe(404);
    expect(
      (await t.server.platform.collections.events.find('tnt_default', { session_id: s.id })).length,
    ).toBe(0);
  });

  it('rejects resources it cannot materialize, and unknown agents/environments, writing nothing', async () => {
    const { agent } = await agentWithModel();
    const before = (await json(await t.http('/v1/sessions?limit=1000'))).body.data.length;
    const r1 = await json(
      await t.http('/v1/sessions', {
        method: 'POST',
        json: {
          agent: agent.id,
          environment_id: envId,
          resources: [{ type: 'file', file_id: 'file_x' }],
        },
      }),
    );
    expect(r1.body.error.message).toMatch(/resources\[0\]\.file_id/);
    const r2 = await json(
      await t.http('/v1/sessions', {
        method: 'POST',
        json: { agent: 'agent_nope', environment_id: envId },
      }),
    );
    expect(r2.body.error.message).toMatch(/^agent: /);
    const r3 = await json(
      await t.http('/v1/sessions', {
        method: 'POST',
        json: { agent: agent.id, environment_id: 'env_nope' },
      }),
    );
    expect(r3.body.error.message).toMatch(/^environment_id: /);
    const r4 = await json(
      await t.http('/v1/sessions', {
        method: 'POST',
        json: { agent: { type: 'agent', id: agent.id, version: 9 }, environment_id: envId },
      }),
    );
    expect(r4.body.error.message).toMatch(/agent\.version/);
    expect((await json(await t.http('/v1/sessions?limit=1000'))).body.data.length).toBe(before);
  });
});

describe('events', () => {
  it('lists with limit/order/after_seq and cursor pages both ways; limit bounds enforced', async () => {
    const { agent } = await agentWithModel();
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    await say(s.id, 'one');
    await untilIdle(s.id);
    await say(s.id, 'two');
    const all = await untilIdle(s.id, 2);
    const seqs = all.map((e: any) => e.seq);
    expect(seqs).toEqual(seqs.map((_: number, i: number) => i + 1)); // gap-free from 1
    // SDK pagination (page/next_page), ascending.
    const viaSdk = [];
    for await (const e of t.client.beta.sessions.events.list(s.id, { limit: 3 }))
      viaSdk.push((e as any).seq);
    expect(viaSdk).toEqual(seqs);
    // Descending pages.
    const desc = [];
    for await (const e of t.client.beta.sessions.events.list(s.id, { limit: 4, order: 'desc' }))
      desc.push((e as any).seq);
    expect(desc).toEqual([...seqs].reverse());
    // after_seq (spec) and types filter (SDK).
    const after = await json(await t.http(`/v1/sessions/${s.id}/events?after_seq=5&limit=2`));
    expect(after.body.data.map((e: any) => e.seq)).toEqual([6, 7]);
    expect(after.body.has_more).toBe(true);
    // A cursor from another query (it points at seq 2) with after_seq=5: both bounds hold, so the
    // page starts after the larger one, as the GraphQL list does (core/src/events/list.ts).
    const first = await json(await t.http(`/v1/sessions/${s.id}/events?limit=2`));
    const second = await json(
      await t.http(`/v1/sessions/${s.id}/events?limit=2&page=${first.body.next_page}`),
    );
    expect(second.body.data.map((e: any) => e.seq)).toEqual([3, 4]);
    const mixed = await json(
      await t.http(`/v1/sessions/${s.id}/events?after_seq=5&limit=2&page=${first.body.next_page}`),
    );
    expect(mixed.body.data.map((e: any) => e.seq)).toEqual([6, 7]);
    const msgs = await json(await t.http(`/v1/sessions/${s.id}/events?types[]=user.message`));
    expect(msgs.body.data.map((e: any) => e.content[0].text)).toEqual(['one', 'two']);
    // Every event carries the spec's fields beside the SDK's flat ones.
    const e0 = msgs.body.data[0];
    expect(e0).toMatchObject({
      type: 'user.message',
      session_id: s.id,
      data: { content: [{ type: 'text', text: 'one' }] },
    });
    for (const bad of ['limit=0', 'limit=1001', 'order=sideways', 'after_seq=-1']) {
      const r = await json(await t.http(`/v1/sessions/${s.id}/events?${bad}`));
      expect(r.status, bad).toBe(400);
      expect(r.body.error.message).toMatch(new RegExp(bad.split('=')[0]!));
    }
    const log = await json(await t.http(`/v1/sessions/${s.id}/log`, { headers: BETA }));
    expect(log.body.map((e: any) => e.seq)).toEqual(seqs);
  });

  it('SSE: no replay by default, replay=1, Last-Event-ID resumes after N, include=chunks adds unpersisted chunks', async () => {
    const { agent, model } = await agentWithModel();
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    await say(s.id, 'first');
    const first = await untilIdle(s.id);
    const head = first.at(-1).seq;
    // Live only: nothing from history arrives before the next turn's events.
    const live = await t.http(`/v1/sessions/${s.id}/events/stream?include=chunks`);
    t.model.script(model, { steps: [{ text: 'streamed words here', chunks: 3 }] });
    await say(s.id, 'second');
    const frames = await readSse(live, (f) => f.event === 'session.status_idle');
    expect(Number(frames.find((f) => f.id)!.id)).toBe(head + 1);
    const chunks = frames.filter((f) => f.event === 'agent.message_chunk');
    expect(chunks.length).toBe(3);
    const final = frames.find((f) => f.event === 'agent.message')!;
    expect(chunks.map((c) => c.data.delta).join('')).toBe('streamed words here');
    expect(chunks.every((c) => c.data.message_id === final.data.id)).toBe(true);
    expect(frames.some((f) => f.event === 'agent.message_stream_start')).toBe(true);
    // Chunks are never persisted: the log only has canonical events.
    const persisted = (await json(await t.http(`/v1/sessions/${s.id}/events?limit=1000`))).body
      .data;
    expect(persisted.some((e: any) => e.type.includes('chunk') || e.type.includes('stream_'))).toBe(
      false,
    );
    // replay=1: full history, in order, no chunks without include.
    const replay = await readSse(
      await t.http(`/v1/sessions/${s.id}/events/stream?replay=1`),
      (f) => Number(f.id) === persisted.at(-1).seq,
    );
    expect(replay.map((f) => Number(f.id))).toEqual(persisted.map((e: any) => e.seq));
    // Last-Event-ID: only seq > N; also through GET …/events with Accept: text/event-stream.
    const resumed = await readSse(
      await t.http(`/v1/sessions/${s.id}/events`, {
        headers: { accept: 'text/event-stream', 'last-event-id': String(head) },
      }),
      (f) => Number(f.id) === persisted.at(-1).seq,
    );
    expect(resumed.map((f) => Number(f.id))).toEqual(
      persisted.filter((e: any) => e.seq > head).map((e: any) => e.seq),
    );
    const bad = await t.http(`/v1/sessions/${s.id}/events/stream`, {
      headers: { 'last-event-id': 'abc' },
    });
    expect(bad.status).toBe(400);
  });

  it('SDK event_deltas: event_start/event_delta frames for agent.message', async () => {
    const { agent, model } = await agentWithModel();
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    const stream = await t.client.beta.sessions.events.stream(s.id, {
      event_deltas: ['agent.message'],
    });
    t.model.script(model, { steps: [{ text: 'abcdef', chunks: 2 }] });
    await say(s.id, 'hi');
    const got: any[] = [];
    for await (const ev of stream) {
      got.push(ev);
      if (ev.type === 'session.status_idle') break;
    }
    const start = got.find((e) => e.type === 'event_start');
    const deltas = got.filter((e) => e.type === 'event_delta');
    const msg = got.find((e) => e.type === 'agent.message');
    expect(start.event).toEqual({ id: msg.id, type: 'agent.message' });
    expect(deltas.map((d) => d.delta.content.text).join('')).toBe('abcdef');
    expect(deltas.every((d) => d.event_id === msg.id)).toBe(true);
  });

  it('POST /messages: string content wrapped, chunks always, closes after session.status_idle', async () => {
    const { agent, model } = await agentWithModel();
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    t.model.script(model, { steps: [{ text: 'reply text', chunks: 2 }] });
    const res = await t.http(`/v1/sessions/${s.id}/messages`, {
      method: 'POST',
      headers: BETA,
      json: { content: 'plain string' },
    });
    expect(res.headers.get('content-type')).toMatch(/text\/event-stream/);
    const frames = await readSse(res, () => false); // reads until the server closes the stream
    expect(frames.at(-1)!.event).toBe('session.status_idle');
    expect(frames[0]!.event).toBe('user.message');
    expect(frames[0]!.data.content).toEqual([{ type: 'text', text: 'plain string' }]);
    expect(frames.filter((f) => f.event === 'agent.message_chunk').length).toBe(2);
    const noBeta = await t.http(`/v1/sessions/${s.id}/messages`, {
      method: 'POST',
      json: { content: 'x' },
    });
    expect(noBeta.status).toBe(400);
    expect(((await noBeta.json()) as any).error.message).toMatch(/anthropic-beta/);
  });

  it('interrupt aborts a slow model call and returns to idle; the next message runs', async () => {
    const { agent, model } = await agentWithModel();
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    t.model.script(model, { steps: [{ text: 'part' }, { delay_ms: 20_000 }, { text: 'never' }] });
    const aborted = t.model.aborted;
    await say(s.id, 'slow please');
    await waitFor(async () => (await t.client.beta.sessions.retrieve(s.id)).status === 'running');
    await waitFor(async () => t.model.requests.filter((r) => r.model === model).length === 1);
    await t.client.beta.sessions.events.send(s.id, { events: [{ type: 'user.interrupt' }] });
    const events = await untilIdle(s.id);
    expect(t.model.aborted).toBeGreaterThan(aborted);
    const idle = events.at(-1);
    expect(idle.type).toBe('session.status_idle');
    expect(idle.interrupted).toBe(true);
    expect(
      events.some((e: any) => e.type === 'agent.message' && e.content[0].text.includes('never')),
    ).toBe(false);
    await say(s.id, 'after');
    const later = await untilIdle(s.id, 2);
    expect(later.at(-1).type).toBe('session.status_idle');
    expect((await t.client.beta.sessions.retrieve(s.id)).status).toBe('idle');
  });

  it('messages sent during a turn run next, in order', async () => {
    const { agent, model } = await agentWithModel();
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    t.model.script(
      model,
      { steps: [{ delay_ms: 3000 }, { text: 'r1' }] },
      { steps: [{ text: 'r2' }] },
    );
    await say(s.id, 'm1');
    await waitFor(async () => (await t.client.beta.sessions.retrieve(s.id)).status === 'running');
    await say(s.id, 'm2');
    await say(s.id, 'm3');
    const events = await untilIdle(s.id, 2);
    const reqs = t.model.requests.filter((r) => r.model === model);
    expect(
      reqs.length,
      JSON.stringify(
        events.map((e: any) => [e.seq, e.type, e.content?.[0]?.text ?? e.error?.type]),
      ),
    ).toBe(2);
    const texts = (m: any) => m.content.map((b: any) => b.text).join('|');
    expect(reqs[1]!.body.messages.map(texts)).toEqual(['m1', 'r1', 'm2|m3']);
    expect(events.filter((e: any) => e.type === 'session.status_running').length).toBe(2);
  });

  it('concurrent sends while a turn runs: every message once, seq gap-free, all answered', async () => {
    const { agent, model } = await agentWithModel();
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    t.model.script(model, { steps: [{ delay_ms: 300 }, { text: 'first' }] });
    await say(s.id, 'm0');
    await Promise.all(Array.from({ length: 25 }, (_, i) => say(s.id, `c${i}`)));
    const events = await waitFor(async () => {
      const ev = (await json(await t.http(`/v1/sessions/${s.id}/events?limit=1000`))).body.data;
      const last = ev.at(-1);
      const s2 = await t.client.beta.sessions.retrieve(s.id);
      // Idle can hold between two turns: every message must have been taken by a turn first.
      const lastMessage = Math.max(
        ...ev.filter((e: any) => e.type === 'user.message').map((e: any) => e.seq),
      );
      const lastRunning = Math.max(
        ...ev.filter((e: any) => e.type === 'session.status_running').map((e: any) => e.seq),
      );
      const count = ev.filter((e: any) => e.type === 'user.message').length;
      return count === 26 &&
        lastRunning > lastMessage &&
        last?.type === 'session.status_idle' &&
        s2.status === 'idle'
        ? ev
        : null;
    }, 30_000);
    expect(events.map((e: any) => e.seq)).toEqual(events.map((_: unknown, i: number) => i + 1));
    const texts = events
      .filter((e: any) => e.type === 'user.message')
      .map((e: any) => e.content[0].text)
      .sort();
    expect(texts).toEqual(['m0', ...Array.from({ length: 25 }, (_, i) => `c${i}`)].sort());
    // Every message reached the model exactly once across the turns.
    const seenByModel = t.model.requests
      .filter((r) => r.model === model)
      .at(-1)!
      .body.messages.filter((m: any) => m.role === 'user')
      .flatMap((m: any) => m.content.map((b: any) => b.text))
      .sort();
    expect(seenByModel).toEqual(texts);
  });

  it('model errors become session.error with the SDK types, then idle', async () => {
    const { agent, model } = await agentWithModel();
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    t.model.script(model, {
      steps: [
        { http_error: { status: 400, type: 'invalid_request_error', message: 'bad prompt' } },
      ],
    });
    await say(s.id, 'x');
    let ev = await untilIdle(s.id);
    let err = ev.find((e: any) => e.type === 'session.error');
    expect(err.error).toMatchObject({
      type: 'model_request_failed_error',
      retry_status: { type: 'terminal' },
    });
    expect(ev.find((e: any) => e.type === 'span.model_request_end').is_error).toBe(true);
    // Overloaded is retried (retrying), then exhausted.
    const overload = {
      steps: [{ http_error: { status: 529, type: 'overloaded_error', message: 'busy' } }],
    };
    t.model.script(model, overload, overload, overload);
    await say(s.id, 'y');
    ev = await untilIdle(s.id, 2);
    const errs = ev.filter((e: any) => e.type === 'session.error').slice(1);
    expect(errs.map((e: any) => [e.error.type, e.error.retry_status.type])).toEqual([
      ['model_overloaded_error', 'retrying'],
      ['model_overloaded_error', 'retrying'],
      ['model_overloaded_error', 'exhausted'],
    ]);
    expect(ev.at(-1).stop_reason).toEqual({ type: 'retries_exhausted' });
    t.model.script(
      model,
      { steps: [{ http_error: { status: 429, type: 'rate_limit_error', message: 'slow down' } }] },
      { steps: [{ text: 'recovered' }] },
    );
    await say(s.id, 'z');
    ev = await untilIdle(s.id, 3);
    expect(ev.filter((e: any) => e.type === 'session.error').at(-1).error).toMatchObject({
      type: 'model_rate_limited_error',
      retry_status: { type: 'retrying' },
    });
    expect(ev.filter((e: any) => e.type === 'agent.message').at(-1).content[0].text).toBe(
      'recovered',
    );
  });

  it('runs turns on an OpenAI-protocol model card with base_url and custom headers', async () => {
    const card = await json(
      await t.http('/v1/svc/model_cards', {
        method: 'POST',
        headers: BETA,
        json: {
          model_id: 'gpt-card',
          provider: 'openai',
          model: 'gpt-wire',
          base_url: `${t.model.url}/v1`,
          api_key: 'sk-openai',
          custom_headers: { 'x-team': 'blue' },
        },
      }),
    );
    expect(card.status).toBe(200);
    const agent = await t.client.beta.agents.create({
      name: 'oai',
      model: { id: 'gpt-card', effort: 'medium' },
    });
    const s = await t.client.beta.sessions.create({ agent: agent.id, environment_id: envId });
    t.model.script('gpt-wire', { steps: [{ text: 'from openai protocol' }] });
    await say(s.id, 'hi');
    const ev = await untilIdle(s.id);
    expect(ev.find((e: any) => e.type === 'agent.message').content[0].text).toBe(
      'from openai protocol',
    );
    const req = t.model.requests.filter((r) => r.model === 'gpt-wire').at(-1)!;
    expect(req.protocol).toBe('openai');
    expect(req.headers['x-team']).toBe('blue');
    expect(req.headers.authorization).toBe('Bearer sk-openai');
    expect(req.body.reasoning_effort).toBe('medium');
  });
});
