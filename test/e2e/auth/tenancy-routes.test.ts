/**
 * Tenant isolation, generated from the route table (gateway/src/openapi/routeTable.ts): every
 * route the app registers, including future ones, is tried without a key (401), with a tenant
 * key where the operator key is required (403), and, when it takes path parameters, by tenant
 * B with tenant A's real ids (404 not_found, never 200/403, nothing of A's in the answer,
 * nothing of A's changed). Path parameters are filled from the OpenAPI document: an id
 * parameter's pattern names its prefix (`^agent_`), which picks A's resource of that kind;
 * request bodies are the document's examples. A route this test cannot exercise fails it with
 * what to add.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routeTableOf, type RouteEntry } from '@agentfleet/gateway';
import { BETA, startPlatform, type TestPlatform } from '../../kit/harness.js';
import {
  startScriptedModelServer,
  type ScriptedModelServer,
} from '../../kit/fixtures/scriptedModel.js';
import { freePort } from '../../kit/process.js';
import { startOidcProvider, type OidcFixture } from '../../kit/fixtures/oidcProvider.js';
import { SignInBrowser, oidcSignIn } from '../../kit/signInBrowser.js';

let t: TestPlatform;
let model: ScriptedModelServer;
let doc: any;
// A console member of tenant A exists only after a sign-in at an identity provider: a real
// OpenID provider gives A a member whose id the member routes are tried with.
let idp: OidcFixture;
let publicUrl: string;
beforeAll(async () => {
  model = await startScriptedModelServer();
  const port = new URL(model.url).port;
  const platformPort = await freePort();
  publicUrl = `http://127.0.0.1:${platformPort}`;
  idp = await startOidcProvider([`${publicUrl}/v1/svc/oauth/oidc/callback`]);
  t = await startPlatform({
    model,
    env: {
      PORT: String(platformPort),
      PUBLIC_URL: publicUrl,
      OIDC_ISSUER: idp.issuer,
      OIDC_CLIENT_ID: idp.clientId,
      OIDC_CLIENT_SECRET: idp.clientSecret,
      EGRESS_CA_CERTS: idp.certFile,
      RATE_LIMIT_PER_MINUTE: '100000',
      // Every route is tried without a key: the per-address failed-authentication limit would bite.
      AUTH_FAILURES_PER_MINUTE: '1000000',
      // Tenant A's model card points at the scripted model on loopback.
      // The identity provider is on loopback too.
      EGRESS_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${port},${new URL(idp.issuer).host}`,
    },
  });
  doc = await (await t.http('/v1/openapi.json', { key: null })).json();
});
afterAll(async () => {
  await t?.close();
  await model?.close();
  await idp?.close();
});

const openApiPath = (url: string) =>
  url.replace(/:([A-Za-z0-9_]+)/g, '{$1}').replace(/\*$/, '{filename}/{nested_path}');
const opOf = (r: RouteEntry) => doc.paths[openApiPath(r.url)]?.[r.method.toLowerCase()];

/** A's resources, by the id prefix their path parameters declare. */
type Fixtures = Record<string, string>;

/** Parameters that are not prefixed ids, by `route:param` or by name. */
const PARAM_VALUES: Record<string, (a: Fixtures) => string> = {
  '/v1/models/:id:id': (a) => a.model_id!,
  version: () => '1',
  filename: () => 'out.txt',
  nested_path: () => 'nested/out.txt',
  // The MCP proxy's server name (operator route: only the 401/403 answers are tried).
  server: () => 'mcp',
  // The console's identity provider (configured here: OIDC_ISSUER).
  provider: () => 'oidc',
};
/**
 * Routes whose path names a shipped integration (`github`), not a tenant resource: tenant B's
 * answer is B's own view (an empty list, B's install state), never A's, and need not be a 404.
 */
const CATALOG_ROUTES = new Set<string>();
for (const base of ['/v1/svc/integrations', '/v1/integrations'])
  for (const tail of ['install', 'callback', 'uninstall', 'publications', 'publications/:pub_id']) {
    PARAM_VALUES[`${base}/:id/${tail}:id`] = () => 'github';
    if (!tail.includes(':')) CATALOG_ROUTES.add(`${base}/:id/${tail}`);
  }

function pathFor(r: RouteEntry, a: Fixtures, problems: string[]): string | null {
  const op = opOf(r);
  const params: any[] = (op?.parameters ?? []).filter((p: any) => p.in === 'path');
  const values: Record<string, string> = {};
  for (const p of params) {
    const prefix = /^\^([a-z]+_)$/.exec(p.schema?.pattern ?? '')?.[1];
    const byRoute = PARAM_VALUES[`${r.url}:${p.name}`] ?? PARAM_VALUES[p.name];
    const value = prefix ? a[prefix] : byRoute?.(a);
    if (value === undefined) {
      problems.push(
        `${r.method} ${r.url}: no value for path parameter '${p.name}'${prefix ? ` (prefix ${prefix}: create one as tenant A in this test's fixtures)` : ' (give it an id pattern in gateway/src/openapi/operations.ts, or add it to PARAM_VALUES here)'}`,
      );
      return null;
    }
    values[p.name] = value;
  }
  let path = r.url.replace(/:([A-Za-z0-9_]+)/g, (_m, name: string) =>
    encodeURIComponent(values[name] ?? `missing-${name}`),
  );
  if (path.endsWith('*')) path = `${path.slice(0, -1)}${values.nested_path ?? 'nested/out.txt'}`;
  return path;
}

function bodyFor(r: RouteEntry, problems: string[]): { json?: unknown } | null {
  const content = opOf(r)?.requestBody?.content;
  if (!content) return {};
  const example = content['application/json']?.example;
  if (example === undefined) {
    if (content['multipart/form-data']) return {};
    problems.push(
      `${r.method} ${r.url}: no request example (add \`example\` to its body in gateway/src/openapi/operations.ts)`,
    );
    return null;
  }
  return { json: example };
}

describe('tenant isolation over the route table', () => {
  it("every route: no key → 401, tenant key on operator routes → 403, another tenant's ids → 404, nothing leaked or changed", async () => {
    const routes = routeTableOf(t.server.app!);
    expect(routes.length).toBeGreaterThan(50);
    const a = await t.newTenant('alpha');
    const b = await t.newTenant('beta');

    // ---- tenant A's resources: one of each kind a path parameter can name
    const SECRET = 'ALPHA-PRIVATE-7f3a';
    const env = await a.client.beta.environments.create({ name: `${SECRET}-env` });
    const agent = await a.client.beta.agents.create({
      name: `${SECRET}-agent`,
      model: 'claude-sonnet-4-5',
      system: SECRET,
    });
    const session = await a.client.beta.sessions.create({
      agent: agent.id,
      environment_id: env.id,
      title: `${SECRET}-session`,
    });
    const cardRes = await t.http('/v1/svc/model_cards', {
      method: 'POST',
      key: a.apiKey,
      headers: BETA,
      json: {
        model_id: `${SECRET}-model`,
        provider: 'anthropic',
        model: 'm',
        base_url: model.url,
        api_key: 'sk-alpha-card',
      },
    });
    expect(cardRes.status, await cardRes.clone().text()).toBe(200);
    const card = (await cardRes.json()) as { id: string; model_id: string };
    const form = new FormData();
    form.set('file', new Blob([SECRET]), `${SECRET}.txt`);
    const fileRes = await t.http('/v1/files', { method: 'POST', key: a.apiKey, body: form });
    expect(fileRes.status).toBe(200);
    const file = (await fileRes.json()) as { id: string };
    const sessionResource = await a.client.beta.sessions.resources.add(session.id, {
      type: 'file',
      file_id: file.id,
    });
    const skillRes = await t.http('/v1/skills', {
      method: 'POST',
      key: a.apiKey,
      json: {
        display_title: `${SECRET}-skill`,
        files: [
          { filename: 'SKILL.md', content: `---\nname: alpha\ndescription: ${SECRET}\n---\n` },
        ],
      },
    });
    expect(skillRes.status, await skillRes.clone().text()).toBe(200);
    const skill = (await skillRes.json()) as { id: string };
    const memoryStore = await a.client.beta.memoryStores.create({ name: `${SECRET}-memory` });
    const memory = await a.client.beta.memoryStores.memories.create(memoryStore.id, {
      path: '/alpha.md',
      content: SECRET,
    });
    const vault = await a.client.beta.vaults.create({ display_name: `${SECRET}-vault` });
    const cred = await a.client.beta.vaults.credentials.create(vault.id, {
      display_name: `${SECRET}-cred`,
      auth: { type: 'static_bearer', token: 'alpha-token', mcp_server_url: 'https://a.test/mcp' },
    });
    const keys = (await (
      await t.http('/v1/svc/api_keys', { key: a.apiKey, headers: BETA })
    ).json()) as { data: Array<{ id: string }> };
    const deployment = await a.client.beta.deployments.create({
      name: `${SECRET}-deployment`,
      agent: agent.id,
      environment_id: env.id,
      initial_events: [{ type: 'user.message', content: [{ type: 'text', text: SECRET }] }],
    });
    const deploymentRun = await a.client.beta.deployments.run(deployment.id);
    const hookRes = await t.http('/v1/svc/webhook_endpoints', {
      method: 'POST',
      key: a.apiKey,
      headers: BETA,
      json: { url: 'https://hooks.example.com/alpha', description: `${SECRET}-hook` },
    });
    expect(hookRes.status, await hookRes.clone().text()).toBe(200);
    const hook = (await hookRes.json()) as { id: string };
    // A session on a self_hosted environment enqueues a Work item (core/src/work).
    const shEnv = await a.client.beta.environments.create({
      name: `${SECRET}-sh`,
      config: { type: 'self_hosted' },
    });
    await a.client.beta.sessions.create({ agent: agent.id, environment_id: shEnv.id });
    const workItem = (await a.client.beta.environments.work.list(shEnv.id)).data[0]!;
    // A dream over A's store and session, settled first so its state no longer changes.
    const dream = await a.client.beta.dreams.create({
      inputs: [
        { type: 'memory_store', memory_store_id: memoryStore.id },
        { type: 'sessions', session_ids: [session.id] },
      ],
      model: 'claude-sonnet-4-5',
    });
    for (let i = 0; i < 200; i++) {
      const d = await a.client.beta.dreams.retrieve(dream.id);
      if (d.status !== 'pending' && d.status !== 'running') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    // An eval run of A (one case judged by expected text), settled first like the dream.
    const evalRes = await t.http('/v1/svc/evals', {
      method: 'POST',
      key: a.apiKey,
      headers: BETA,
      json: {
        agent: agent.id,
        environment_id: env.id,
        cases: [{ prompt: `${SECRET} hi`, expected_text: 'ok' }],
      },
    });
    expect(evalRes.status, await evalRes.clone().text()).toBe(200);
    const evalRun = (await evalRes.json()) as { id: string };
    for (let i = 0; i < 200; i++) {
      const r = (await (
        await t.http(`/v1/svc/evals/${evalRun.id}`, { key: a.apiKey, headers: BETA })
      ).json()) as { status: string };
      if (r.status !== 'queued' && r.status !== 'running') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    // A console member of A (signed in at the IdP after an invitation) and a pending invitation.
    const invite = async (email: string) => {
      const res = await t.http('/v1/svc/console/invitations', {
        method: 'POST',
        key: a.apiKey,
        json: { email, role: 'member' },
      });
      expect(res.status, await res.clone().text()).toBe(200);
      return (await res.json()) as { id: string };
    };
    await invite('alpha-member@alpha.test');
    const pending = await invite('alpha-pending@alpha.test');
    idp.accounts.set('alpha', {
      email: 'alpha-member@alpha.test',
      email_verified: true,
      name: 'a',
    });
    const signIn = new SignInBrowser(idp.certFile);
    try {
      await oidcSignIn(signIn, `${publicUrl}/v1/svc/oauth/oidc/authorize`, 'alpha');
    } finally {
      await signIn.close();
    }
    const members = (await (await t.http('/v1/svc/console/members', { key: a.apiKey })).json()) as {
      data: Array<{ user_id: string }>;
    };
    expect(members.data).toHaveLength(1);
    const pubRes = await t.http('/v1/svc/integrations/github/publications', {
      method: 'POST',
      key: a.apiKey,
      headers: BETA,
      json: { agent: agent.id, environment_id: env.id, workspace: { owner: `${SECRET}-org` } },
    });
    expect(pubRes.status, await pubRes.clone().text()).toBe(200);
    const publication = (await pubRes.json()) as { id: string };

    const fixtures: Fixtures = {
      agent_: agent.id,
      env_: env.id,
      sess_: session.id,
      // The session's primary thread (core/src/threads/records.ts primaryThreadId).
      sthr_: `sthr_${session.id.slice('sess_'.length)}`,
      mc_: card.id,
      key_: keys.data[0]!.id,
      file_: file.id,
      skill_: skill.id,
      memstore_: memoryStore.id,
      mem_: memory.id,
      memver_: memory.memory_version_id,
      drm_: dream.id,
      eval_: evalRun.id,
      vlt_: vault.id,
      vcrd_: cred.id,
      depl_: deployment.id,
      drun_: deploymentRun.id,
      whep_: hook.id,
      work_: workItem.id,
      model_id: card.model_id,
      usr_: members.data[0]!.user_id,
      inv_: pending.id,
      sres_: sessionResource.id,
      pub_: publication.id,
    };
    const aValues = [SECRET, ...Object.values(fixtures)];

    const problems: string[] = [];
    const failures: string[] = [];
    const call = async (
      r: RouteEntry,
      path: string,
      key: string | null,
      body: { json?: unknown },
    ) => {
      const res = await t.http(path, {
        method: r.method,
        key,
        headers: BETA,
        ...body,
        // The sign-in routes answer with redirects to the identity provider: not followed.
        redirect: 'manual',
        signal: AbortSignal.timeout(15_000),
      });
      const text = await res.text();
      return {
        status: res.status,
        text,
        body: (() => {
          try {
            return JSON.parse(text);
          } catch {
            return null;
          }
        })(),
      };
    };

    let tried404 = 0;
    for (const r of routes) {
      const what = `${r.method} ${r.url}`;
      if (!opOf(r)) {
        problems.push(
          `${what}: not in the OpenAPI document (add it to gateway/src/openapi/operations.ts)`,
        );
        continue;
      }
      const path = pathFor(r, fixtures, problems);
      const body = bodyFor(r, problems);
      if (path === null || body === null) continue;

      if (r.public) {
        const res = await call(r, path, null, body);
        // A public route that takes a credential in its body (console key sign-in) documents
        // its 401; any other public route answering 401 is a failure.
        if (res.status === 401 && !opOf(r)?.responses?.['401'])
          failures.push(`${what}: public route answered 401`);
        continue;
      }
      // No key, and a key nobody issued: 401 in the error shape.
      for (const key of [null, 'afk_not-a-key']) {
        const res = await call(r, path, key, body);
        if (res.status !== 401 || res.body?.error?.type !== 'unauthorized')
          failures.push(
            `${what} with ${key ? 'an unknown' : 'no'} key: ${res.status} ${res.text.slice(0, 200)}`,
          );
      }
      if (r.operator) {
        const res = await call(r, path, a.apiKey, body);
        if (res.status !== 403 || res.body?.error?.type !== 'forbidden')
          failures.push(`${what} with a tenant key: ${res.status} (operator only: want 403)`);
        continue;
      }
      // Tenant B: with A's ids a 404; anywhere, nothing of A's in the answer beyond what B sent.
      const res = await call(r, path, b.apiKey, body);
      const leaked = aValues.filter(
        (v) => res.text.includes(v) && !path.includes(encodeURIComponent(v)),
      );
      if (leaked.length)
        failures.push(`${what} as tenant B leaked ${leaked.join(', ')}: ${res.text.slice(0, 200)}`);
      if ((r.url.includes(':') || r.url.endsWith('*')) && !CATALOG_ROUTES.has(r.url)) {
        tried404++;
        if (res.status !== 404 || res.body?.error?.type !== 'not_found')
          failures.push(
            `${what} as tenant B with A's ids (${path}): ${res.status} ${res.text.slice(0, 200)}`,
          );
      }
    }
    expect(problems, 'routes this test cannot exercise yet').toEqual([]);
    expect(failures).toEqual([]);
    // The id routes were exercised (every REST resource kind has several).
    expect(tried404).toBeGreaterThan(30);

    // Sessions may not reference another tenant's agent or environment either.
    const benv = await b.client.beta.environments.create({ name: 'b-env' });
    await expect(
      b.client.beta.sessions.create({ agent: agent.id, environment_id: benv.id }),
    ).rejects.toMatchObject({ status: 400 });
    const bagent = await b.client.beta.agents.create({
      name: 'b-agent',
      model: 'claude-sonnet-4-5',
    });
    await expect(
      b.client.beta.sessions.create({ agent: bagent.id, environment_id: env.id }),
    ).rejects.toMatchObject({ status: 400 });

    // Nothing of A's was changed by B's calls (updates, archives, deletes, cancels, sends).
    const still = await a.client.beta.agents.retrieve(agent.id);
    expect(still.version).toBe(1);
    expect(still.archived_at).toBeNull();
    const s = await a.client.beta.sessions.retrieve(session.id);
    expect(s.title).toBe(`${SECRET}-session`);
    expect(s.archived_at).toBeNull();
    const stillMembers = (await (
      await t.http('/v1/svc/console/members', { key: a.apiKey })
    ).json()) as { data: Array<{ user_id: string; role: string }> };
    expect(stillMembers.data).toEqual([
      expect.objectContaining({ user_id: fixtures.usr_, role: 'member' }),
    ]);
    const stillInvited = (await (
      await t.http('/v1/svc/console/invitations', { key: a.apiKey })
    ).json()) as { data: Array<{ id: string }> };
    expect(stillInvited.data.map((i) => i.id)).toContain(pending.id);
    expect((await a.client.beta.environments.retrieve(env.id)).archived_at).toBeNull();
    expect(
      (
        (await t
          .http(`/v1/sessions/${session.id}/events`, { key: a.apiKey })
          .then((r) => r.json())) as any
      ).data,
    ).toEqual([]);
    expect((await t.http(`/v1/files/${file.id}/content`, { key: a.apiKey })).status).toBe(200);
    expect((await a.client.beta.vaults.retrieve(vault.id)).archived_at).toBeNull();
    expect(await a.client.beta.deployments.retrieve(deployment.id)).toMatchObject({
      archived_at: null,
      status: 'active',
      name: `${SECRET}-deployment`,
    });
    const credNow = await a.client.beta.vaults.credentials.retrieve(cred.id, {
      vault_id: vault.id,
    });
    expect([credNow.archived_at, credNow.display_name]).toEqual([null, `${SECRET}-cred`]);
    const cards = (await (
      await t.http('/v1/svc/model_cards', { key: a.apiKey, headers: BETA })
    ).json()) as { data: Array<{ id: string; api_key_preview: string }> };
    expect(cards.data.map((c) => [c.id, c.api_key_preview])).toEqual([[card.id, '…card']]);
    expect((await t.http('/v1/agents', { key: a.apiKey })).status).toBe(200);
  });

  it('the generator refuses a route it cannot exercise, saying what to add', () => {
    const problems: string[] = [];
    const route: RouteEntry = {
      method: 'GET',
      url: '/v1/widgets/:widget_ref',
      public: false,
      operator: false,
      beta: false,
    };
    doc.paths['/v1/widgets/{widget_ref}'] = {
      get: {
        parameters: [
          { name: 'widget_ref', in: 'path', required: true, schema: { type: 'string' } },
        ],
        responses: {},
      },
    };
    try {
      expect(pathFor(route, {}, problems)).toBeNull();
      expect(problems).toEqual([
        expect.stringContaining("no value for path parameter 'widget_ref'"),
      ]);
      const post: RouteEntry = { ...route, method: 'POST' };
      doc.paths['/v1/widgets/{widget_ref}'].post = {
        requestBody: { content: { 'application/json': { schema: {} } } },
        responses: {},
      };
      expect(bodyFor(post, problems)).toBeNull();
      expect(problems[1]).toMatch(/no request example/);
    } finally {
      delete doc.paths['/v1/widgets/{widget_ref}'];
    }
  });
});
