// k6: REST reads. Seeds a few agents, sessions and events, then reads them with many VUs.
import http from 'k6/http';
import { check, fail } from 'k6';

const BASE = __ENV.BASE_URL;
const KEY = __ENV.API_KEY;
const MODEL = __ENV.MODEL || 'claude-sonnet-4-5';
if (!/^http:\/\/(127\.0\.0\.1|localhost)(:\d+)?$/.test(BASE || ''))
  fail('BASE_URL must be http://127.0.0.1:<port>');

export const options = {
  scenarios: {
    reads: {
      executor: 'constant-vus',
      vus: Number(__ENV.VUS || 32),
      duration: __ENV.DURATION || '20s',
    },
  },
  thresholds: {
    http_req_failed: ['rate<0.01'],
    'http_req_duration{name:get_agent}': ['p(95)<50'],
    'http_req_duration{name:list_events}': ['p(95)<100'],
    'http_req_duration{name:list_agents}': ['p(95)<100'],
  },
};

const headers = {
  'x-api-key': KEY,
  'content-type': 'application/json',
  'anthropic-beta': 'managed-agents-2026-04-01',
};

export function setup() {
  const env = http
    .post(`${BASE}/v1/environments`, JSON.stringify({ name: 'k6-reads' }), { headers })
    .json('id');
  const agents = [];
  const sessions = [];
  for (let i = 0; i < 10; i++) {
    const a = http.post(`${BASE}/v1/agents`, JSON.stringify({ name: `reads-${i}`, model: MODEL }), {
      headers,
    });
    if (a.status !== 200) fail(`agent: ${a.status} ${a.body}`);
    agents.push(a.json('id'));
    const s = http
      .post(`${BASE}/v1/sessions`, JSON.stringify({ agent: a.json('id'), environment_id: env }), {
        headers,
      })
      .json('id');
    http.post(`${BASE}/v1/sessions/${s}/messages`, JSON.stringify({ content: 'seed' }), {
      headers,
      timeout: '30s',
    });
    sessions.push(s);
  }
  return { agents, sessions };
}

export default function (data) {
  const a = data.agents[Math.floor(Math.random() * data.agents.length)];
  const s = data.sessions[Math.floor(Math.random() * data.sessions.length)];
  check(http.get(`${BASE}/v1/agents/${a}`, { headers, tags: { name: 'get_agent' } }), {
    'agent 200': (r) => r.status === 200,
  });
  check(http.get(`${BASE}/v1/agents?limit=20`, { headers, tags: { name: 'list_agents' } }), {
    'agents 200': (r) => r.status === 200,
  });
  check(http.get(`${BASE}/v1/sessions/${s}`, { headers, tags: { name: 'get_session' } }), {
    'session 200': (r) => r.status === 200,
  });
  check(
    http.get(`${BASE}/v1/sessions/${s}/events?limit=100`, {
      headers,
      tags: { name: 'list_events' },
    }),
    { 'events 200': (r) => r.status === 200 },
  );
}
