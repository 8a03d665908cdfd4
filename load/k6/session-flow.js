// k6: the session flow. Each iteration creates an agent and a session, sends a message with
// POST /v1/sessions/:id/messages (an SSE response that closes after session.status_idle, so the
// whole turn is one request), then checks the log ends idle. Targets BASE_URL (127.0.0.1 only).
import http from 'k6/http';
import { check, fail } from 'k6';
import { Trend } from 'k6/metrics';

const BASE = __ENV.BASE_URL;
const KEY = __ENV.API_KEY;
const MODEL = __ENV.MODEL || 'claude-sonnet-4-5';
if (!/^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?$/.test(BASE || ''))
  fail('BASE_URL must be http://127.0.0.1:<port>');

export const options = {
  scenarios: {
    sessions: {
      executor: 'constant-vus',
      vus: Number(__ENV.VUS || 8),
      duration: __ENV.DURATION || '20s',
    },
  },
  thresholds: {
    http_req_failed: ['rate<0.01'],
    turn_duration: ['p(95)<2000'],
    'http_req_duration{name:create_session}': ['p(95)<500'],
  },
};

const turn = new Trend('turn_duration', true);
const headers = {
  'x-api-key': KEY,
  'content-type': 'application/json',
  'anthropic-beta': 'managed-agents-2026-04-01',
};

export function setup() {
  const env = http.post(`${BASE}/v1/environments`, JSON.stringify({ name: 'k6' }), { headers });
  check(env, { 'environment created': (r) => r.status === 200 }) ||
    fail(`environment: ${env.status} ${env.body}`);
  return { envId: env.json('id') };
}

export default function (data) {
  const agent = http.post(
    `${BASE}/v1/agents`,
    JSON.stringify({ name: `k6-${__VU}-${__ITER}`, model: MODEL }),
    { headers, tags: { name: 'create_agent' } },
  );
  if (!check(agent, { 'agent created': (r) => r.status === 200 })) return;
  const session = http.post(
    `${BASE}/v1/sessions`,
    JSON.stringify({ agent: agent.json('id'), environment_id: data.envId }),
    { headers, tags: { name: 'create_session' } },
  );
  if (!check(session, { 'session created': (r) => r.status === 200 })) return;
  const sid = session.json('id');
  const res = http.post(
    `${BASE}/v1/sessions/${sid}/messages`,
    JSON.stringify({ content: 'hello from k6' }),
    { headers, tags: { name: 'messages' }, timeout: '30s' },
  );
  turn.add(res.timings.duration);
  check(res, {
    'stream ok': (r) => r.status === 200,
    'stream has chunks': (r) => r.body.includes('event: agent.message_chunk'),
    'stream ends idle': (r) =>
      r.body.trimEnd().split('\n\n').pop().includes('event: session.status_idle'),
  });
  const events = http.get(`${BASE}/v1/sessions/${sid}/events?order=desc&limit=1`, {
    headers,
    tags: { name: 'events_tail' },
  });
  check(events, {
    'log ends idle': (r) => r.status === 200 && r.json('data.0.type') === 'session.status_idle',
  });
}
