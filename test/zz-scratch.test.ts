import { it } from 'vitest';
import { startPlatform } from './harness.js';

it('edges', async () => {
  const t = await startPlatform();
  const show = async (label: string, r: Response) => console.log(label, r.status, r.headers.get('content-type'), (await r.text()).slice(0, 400));
  await show('sub via apollo', await t.http('/graphql', { method: 'POST', json: { query: 'subscription { sessionEvents(sessionId: "x") { id } }' } }));
  await show('GET mutation', await t.http(`/graphql?query=${encodeURIComponent('mutation { interrupt(sessionId: "x") { id } }')}`));
  await show('parse error', await t.http('/graphql', { method: 'POST', json: { query: '{ agents ' } }));
  await show('no query', await t.http('/graphql', { method: 'POST', json: {} }));
  await show('stream no token json', await t.http('/graphql/stream', { method: 'POST', json: { query: '{ agents { hasMore } }' } }));
  await show('stream query over sse', await t.http('/graphql/stream', { method: 'POST', headers: { accept: 'text/event-stream' }, json: { query: '{ agents { hasMore } }' } }));
  await show('stream bad field over sse', await t.http('/graphql/stream', { method: 'POST', headers: { accept: 'text/event-stream' }, json: { query: '{ nope }' } }));
  await show('stream PUT', await t.http('/graphql/stream', { method: 'PUT' }));
  await show('text/plain post', await t.http('/graphql', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"query":"{ agents { hasMore } }"}' }));
  await show('html GET', await t.http('/graphql', { headers: { accept: 'text/html' } }));
  await show('introspection', await t.http('/graphql', { method: 'POST', json: { query: '{ __schema { queryType { name } } }' } }));
  await show('agent missing', await t.http('/graphql', { method: 'POST', json: { query: '{ agent(id: "agt_nope") { id } }' } }));
  await show('agent version 0', await t.http('/graphql', { method: 'POST', json: { query: '{ agent(id: "agt_nope", version: 0) { id } }' } }));
  await t.close();
}, 30000);
