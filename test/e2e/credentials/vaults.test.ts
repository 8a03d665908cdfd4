/**
 * Vaults and credentials (core/src/vaults/vaults.ts), through the official TypeScript
 * SDK and HTTP against an in-process platform, plus the domain's live lookup
 * `credentialForHost` called directly on the running platform:
 * - vault CRUD (SDK POST update and the spec's PATCH), archive, delete (credentials go with it);
 * - every credential type (static_bearer, mcp_oauth with each token endpoint auth,
 *   environment_variable, cap_cli, command_secret): no secret in any response or list, and none
 *   in clear at rest;
 * - rotation through update is what the next credentialForHost returns (no cache);
 * - at most 20 credentials per vault (the 21st is a 400 naming vault_id);
 * - another tenant's vault or credential is a 404; session vault_ids are validated (unknown,
 *   archived, foreign → 400 naming vault_ids[i]) and served;
 * - mcp_oauth_validate of a static_bearer credential is a 400 naming credential_id (the probe
 *   itself: test/e2e/mcp/mcp-proxy-validate.test.ts).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { Value } from '@sinclair/typebox/value';
import { Credential, Vault } from '@agentfleet/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REAL, startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
});
afterAll(async () => {
  await t?.close();
});

const rnd = () => Math.random().toString(36).slice(2);
const SECRETS = {
  bearer: `bearer-${rnd()}${rnd()}`,
  access: `access-${rnd()}${rnd()}`,
  refresh: `refresh-${rnd()}${rnd()}`,
  clientSecret: `client-secret-${rnd()}${rnd()}`,
  env: `env-value-${rnd()}${rnd()}`,
  cli: `cli-token-${rnd()}${rnd()}`,
  cmd: `cmd-secret-${rnd()}${rnd()}`,
  rotated: `rotated-${rnd()}${rnd()}`,
};
const noSecretIn = (x: unknown) => {
  const text = JSON.stringify(x);
  for (const s of Object.values(SECRETS)) expect(text).not.toContain(s);
};

async function badRequest(p: Promise<unknown>, field: string): Promise<string> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Anthropic.BadRequestError);
  const message = (err as any).error.error.message as string;
  expect(message).toContain(field);
  return message;
}

const filesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });

describe('vaults', () => {
  it('create, retrieve, update (SDK POST and spec PATCH), list, archive, delete', async () => {
    const c = t.client;
    const v = await c.beta.vaults.create({ display_name: 'team', metadata: { k: '1' } });
    expect(v).toMatchObject({ type: 'vault', display_name: 'team', metadata: { k: '1' } });
    expect(v.id).toMatch(/^vlt_/);
    expect(v.archived_at).toBeNull();
    expect(await c.beta.vaults.retrieve(v.id)).toEqual(v);

    const u = await c.beta.vaults.update(v.id, { display_name: 'renamed', metadata: { k: null } });
    expect([u.display_name, u.metadata]).toEqual(['renamed', {}]);
    const patched = await t.http(`/v1/vaults/${v.id}`, {
      method: 'PATCH',
      json: { metadata: { env: 'prod' } },
    });
    expect(patched.status).toBe(200);
    expect(((await patched.json()) as any).metadata).toEqual({ env: 'prod' });

    const other = await c.beta.vaults.create({ display_name: 'other' });
    const ids = async (q = {}) => (await c.beta.vaults.list(q)).data.map((x) => x.id);
    expect(await ids()).toEqual(expect.arrayContaining([v.id, other.id]));

    const archived = await c.beta.vaults.archive(other.id);
    expect(archived.archived_at).not.toBeNull();
    expect(await ids()).not.toContain(other.id);
    expect(await ids({ include_archived: true })).toContain(other.id);
    await badRequest(c.beta.vaults.update(other.id, { display_name: 'x' }), 'archived');

    await c.beta.vaults.credentials.create(v.id, {
      auth: { type: 'static_bearer', token: SECRETS.bearer, mcp_server_url: 'https://d.test/m' },
    });
    expect(await c.beta.vaults.delete(v.id)).toEqual({ id: v.id, type: 'vault_deleted' });
    await expect(c.beta.vaults.retrieve(v.id)).rejects.toBeInstanceOf(Anthropic.NotFoundError);
    await expect(c.beta.vaults.credentials.list(v.id)).rejects.toBeInstanceOf(
      Anthropic.NotFoundError,
    );
    await badRequest(c.beta.vaults.create({ display_name: '' }), 'display_name');

    // The spec's create body: `name`, and the secrets inline (all validated before any is stored).
    const before = (await c.beta.vaults.list({ limit: 1000 })).data.length;
    const inline = (auth: object[]) =>
      t.http('/v1/vaults', {
        method: 'POST',
        json: { name: 'spec', credentials: auth.map((a) => ({ auth: a })) },
      });
    const ok = { type: 'static_bearer', token: SECRETS.bearer, mcp_server_url: 'https://s.test/' };
    const bad = await inline([ok, { ...ok, mcp_server_url: 'nope' }]);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('credentials[1].auth.mcp_server_url');
    expect((await c.beta.vaults.list({ limit: 1000 })).data.length).toBe(before);
    const made = await inline([ok]);
    const spec = (await made.json()) as any;
    expect([made.status, spec.name, spec.display_name]).toEqual([200, 'spec', 'spec']);
    const creds = await c.beta.vaults.credentials.list(spec.id);
    expect(creds.data.map((x) => x.auth)).toEqual([
      { type: 'static_bearer', mcp_server_url: 'https://s.test/' },
    ]);
    noSecretIn(spec);
  });

  it('credentials of every type: served and listed without secret material, sealed at rest', async () => {
    const c = t.client;
    const v = await c.beta.vaults.create({ display_name: 'creds' });
    const cr = c.beta.vaults.credentials;
    const bearer = await cr.create(v.id, {
      display_name: 'gh',
      auth: {
        type: 'static_bearer',
        token: SECRETS.bearer,
        mcp_server_url: 'https://Mcp.A.test/mcp',
      },
    });
    expect(bearer).toMatchObject({
      type: 'vault_credential',
      vault_id: v.id,
      display_name: 'gh',
      auth: { type: 'static_bearer', mcp_server_url: 'https://Mcp.A.test/mcp' },
    });
    expect(bearer.id).toMatch(/^vcrd_/);
    const oauth = [];
    for (const tea of [
      { type: 'none' as const },
      { type: 'client_secret_basic' as const, client_secret: SECRETS.clientSecret },
      { type: 'client_secret_post' as const, client_secret: SECRETS.clientSecret },
    ])
      oauth.push(
        await cr.create(v.id, {
          auth: {
            type: 'mcp_oauth',
            access_token: SECRETS.access,
            mcp_server_url: `https://oauth-${tea.type}.test/mcp`,
            expires_at: '2030-01-01T00:00:00Z',
            refresh: {
              client_id: 'cid',
              refresh_token: SECRETS.refresh,
              token_endpoint: 'https://auth.test/token',
              token_endpoint_auth: tea,
              scope: 'read',
            },
          },
        }),
      );
    expect(oauth.map((o) => o.auth)).toEqual(
      ['none', 'client_secret_basic', 'client_secret_post'].map((type) => ({
        type: 'mcp_oauth',
        mcp_server_url: `https://oauth-${type}.test/mcp`,
        expires_at: '2030-01-01T00:00:00.000Z',
        refresh: {
          client_id: 'cid',
          token_endpoint: 'https://auth.test/token',
          token_endpoint_auth: { type },
          resource: null,
          scope: 'read',
        },
      })),
    );
    const envVar = await cr.create(v.id, {
      auth: {
        type: 'environment_variable',
        secret_name: 'API_TOKEN',
        secret_value: SECRETS.env,
        networking: { type: 'limited', allowed_hosts: ['api.e.test'] },
      },
    });
    expect(envVar.auth).toEqual({
      type: 'environment_variable',
      secret_name: 'API_TOKEN',
      networking: { type: 'limited', allowed_hosts: ['api.e.test'] },
      injection_location: { body: false, header: true },
    });
    const spec = async (auth: unknown) =>
      (await t.http(`/v1/vaults/${v.id}/credentials`, { method: 'POST', json: { auth } })).json();
    const cli = (await spec({ type: 'cap_cli', cli_id: 'gh', token: SECRETS.cli })) as any;
    expect(cli.auth).toEqual({ type: 'cap_cli', cli_id: 'gh' });
    const cmd = (await spec({
      type: 'command_secret',
      secret_name: 'GIT_TOKEN',
      secret_value: SECRETS.cmd,
      commands: ['git'],
    })) as any;
    expect(cmd.auth).toEqual({
      type: 'command_secret',
      secret_name: 'GIT_TOKEN',
      commands: ['git'],
    });

    const all = [bearer, ...oauth, envVar, cli, cmd];
    noSecretIn(all);
    // Served shapes are exactly the documented ones (strict: no extra field, so no secret field).
    // (JSON round trip: the SDK adds non-enumerable _request_id fields to what it returns.)
    const plain = (x: unknown) => JSON.parse(JSON.stringify(x));
    for (const x of all)
      expect([...Value.Errors(Credential, plain(x))].map((e) => `${e.path} ${e.message}`)).toEqual(
        [],
      );
    expect(Value.Check(Vault, plain(v))).toBe(true);
    const listed = await cr.list(v.id);
    expect(listed.data.map((x) => x.id).sort()).toEqual(all.map((x) => x.id).sort());
    noSecretIn(listed.data);
    for (const x of all) noSecretIn(await cr.retrieve(x.id, { vault_id: v.id }));
    noSecretIn(await (await t.http(`/v1/vaults/${v.id}/credentials`)).text());

    // Bad bodies: 400 naming the field, nothing stored.
    await badRequest(
      cr.create(v.id, {
        auth: { type: 'static_bearer', token: 'x', mcp_server_url: 'ftp://nope' },
      }),
      'auth.mcp_server_url',
    );
    await badRequest(
      cr.create(v.id, {
        auth: {
          type: 'environment_variable',
          secret_name: 'A',
          secret_value: 'x',
          networking: { type: 'unrestricted' },
          injection_location: { body: false, header: false },
        },
      }),
      'auth.injection_location',
    );
    expect((await cr.list(v.id)).data.length).toBe(all.length);

    // At rest: sealed (the embedded store's files; the real adapters keep documents in MongoDB).
    if (!REAL) {
      const stored = filesUnder(t.dataDir).map((f) => readFileSync(f));
      expect(stored.some((b) => b.includes('secrets_sealed'))).toBe(true);
      for (const s of Object.values(SECRETS))
        expect(stored.filter((b) => b.includes(s)).length).toBe(0);
    }
  });

  it('rotation through update is what the next credentialForHost returns; types and fields are checked', async () => {
    const c = t.client;
    const vaults = t.server.platform.vaults;
    const tenant = (await t.newTenant('rotation')).tenantId;
    // The operator's tenant: find it from a vault the operator key creates.
    const v = await c.beta.vaults.create({ display_name: 'rot' });
    const opTenant = (await t.server.platform.collections.vaults.scanAll({ _id: v.id }))[0]!
      .tenant_id;
    const cr = c.beta.vaults.credentials;
    const b = await cr.create(v.id, {
      auth: {
        type: 'static_bearer',
        token: SECRETS.bearer,
        mcp_server_url: 'https://MCP.r.test/x',
      },
    });
    const found = await vaults.credentialForHost(opTenant, [v.id], 'mcp.R.test');
    expect(found).toMatchObject({
      credential_id: b.id,
      vault_id: v.id,
      type: 'static_bearer',
      secrets: { token: SECRETS.bearer },
    });
    expect(await vaults.credentialForHost(opTenant, [v.id], 'other.test')).toBeNull();
    expect(await vaults.credentialForHost(tenant, [v.id], 'mcp.r.test')).toBeNull();

    const rotated = await cr.update(b.id, {
      vault_id: v.id,
      auth: { type: 'static_bearer', token: SECRETS.rotated },
    });
    noSecretIn(rotated);
    expect((await vaults.credentialForHost(opTenant, [v.id], 'mcp.r.test'))?.secrets).toEqual({
      token: SECRETS.rotated,
    });
    await badRequest(
      cr.update(b.id, { vault_id: v.id, auth: { type: 'mcp_oauth', access_token: 'x' } }),
      'auth.type',
    );

    // mcp_oauth: new access token without expires_at drops the expiry; refresh secrets rotate.
    const o = await cr.create(v.id, {
      auth: {
        type: 'mcp_oauth',
        access_token: SECRETS.access,
        mcp_server_url: 'https://o.r.test/mcp',
        expires_at: '2030-01-01T00:00:00Z',
        refresh: {
          client_id: 'cid',
          refresh_token: SECRETS.refresh,
          token_endpoint: 'https://auth.r.test/token',
          token_endpoint_auth: { type: 'client_secret_post', client_secret: SECRETS.clientSecret },
        },
      },
    });
    const o2 = await cr.update(o.id, {
      vault_id: v.id,
      auth: {
        type: 'mcp_oauth',
        access_token: 'new-access',
        refresh: {
          refresh_token: 'new-refresh',
          token_endpoint_auth: { type: 'client_secret_post', client_secret: 'new-secret' },
        },
      },
    });
    expect((o2.auth as any).expires_at).toBeNull();
    expect((await vaults.credentialForHost(opTenant, [v.id], 'o.r.test'))?.secrets).toEqual({
      access_token: 'new-access',
      refresh_token: 'new-refresh',
      client_secret: 'new-secret',
    });
    const o3 = await cr.update(o.id, {
      vault_id: v.id,
      auth: { type: 'mcp_oauth', refresh: null },
    });
    expect((o3.auth as any).refresh).toBeNull();
    expect((await vaults.credentialForHost(opTenant, [v.id], 'o.r.test'))?.secrets).toEqual({
      access_token: 'new-access',
    });

    // Vault order decides; archived credentials and vaults, and deleted vaults, never match.
    const first = await c.beta.vaults.create({ display_name: 'first' });
    const f = await cr.create(first.id, {
      auth: { type: 'static_bearer', token: 'first-token', mcp_server_url: 'https://mcp.r.test/y' },
    });
    const pick = async (ids: string[]) =>
      (await vaults.credentialForHost(opTenant, ids, 'mcp.r.test'))?.credential_id ?? null;
    expect(await pick([first.id, v.id])).toBe(f.id);
    expect(await pick([v.id, first.id])).toBe(b.id);
    await cr.archive(f.id, { vault_id: first.id });
    expect(await pick([first.id, v.id])).toBe(b.id);
    await c.beta.vaults.archive(v.id);
    expect(await pick([first.id, v.id])).toBeNull();
    await c.beta.vaults.delete(first.id);
    expect(await pick([first.id])).toBeNull();

    // Every active credential of the live vaults, opened (for placeholders and CLIs).
    const w = await c.beta.vaults.create({ display_name: 'all' });
    await t.http(`/v1/vaults/${w.id}/credentials`, {
      method: 'POST',
      json: { auth: { type: 'cap_cli', cli_id: 'gh', token: SECRETS.cli } },
    });
    expect(await vaults.credentialsOf(opTenant, [w.id])).toEqual([
      expect.objectContaining({
        type: 'cap_cli',
        auth: { type: 'cap_cli', cli_id: 'gh' },
        secrets: { token: SECRETS.cli },
      }),
    ]);
  });

  it('a vault holds at most 20 credentials; deleting one frees a slot', async () => {
    const c = t.client;
    const v = await c.beta.vaults.create({ display_name: 'full' });
    const made = [];
    for (let i = 0; i < 20; i++)
      made.push(
        await c.beta.vaults.credentials.create(v.id, {
          auth: { type: 'static_bearer', token: `t${i}`, mcp_server_url: `https://h${i}.test/` },
        }),
      );
    const message = await badRequest(
      c.beta.vaults.credentials.create(v.id, {
        auth: { type: 'static_bearer', token: 't20', mcp_server_url: 'https://h20.test/' },
      }),
      'vault_id',
    );
    expect(message).toContain('20');
    const page = await c.beta.vaults.credentials.list(v.id, { limit: 100 });
    expect(page.data.length).toBe(20);
    await c.beta.vaults.credentials.delete(made[0]!.id, { vault_id: v.id });
    await c.beta.vaults.credentials.create(v.id, {
      auth: { type: 'static_bearer', token: 't20', mcp_server_url: 'https://h20.test/' },
    });
  });

  it("another tenant's vaults and credentials are 404; mcp_oauth_validate refuses a static_bearer", async () => {
    const a = await t.newTenant('va');
    const b = await t.newTenant('vb');
    const v = await a.client.beta.vaults.create({ display_name: 'a-vault' });
    const cred = await a.client.beta.vaults.credentials.create(v.id, {
      auth: { type: 'static_bearer', token: SECRETS.bearer, mcp_server_url: 'https://a.test/' },
    });
    const NF = Anthropic.NotFoundError;
    const bc = b.client.beta.vaults;
    await expect(bc.retrieve(v.id)).rejects.toBeInstanceOf(NF);
    await expect(bc.update(v.id, { display_name: 'x' })).rejects.toBeInstanceOf(NF);
    await expect(bc.archive(v.id)).rejects.toBeInstanceOf(NF);
    await expect(bc.delete(v.id)).rejects.toBeInstanceOf(NF);
    await expect(bc.credentials.list(v.id)).rejects.toBeInstanceOf(NF);
    await expect(
      bc.credentials.create(v.id, {
        auth: { type: 'static_bearer', token: 'x', mcp_server_url: 'https://a.test/' },
      }),
    ).rejects.toBeInstanceOf(NF);
    const q = { vault_id: v.id };
    await expect(bc.credentials.retrieve(cred.id, q)).rejects.toBeInstanceOf(NF);
    await expect(
      bc.credentials.update(cred.id, { ...q, auth: { type: 'static_bearer', token: 'x' } }),
    ).rejects.toBeInstanceOf(NF);
    await expect(bc.credentials.archive(cred.id, q)).rejects.toBeInstanceOf(NF);
    await expect(bc.credentials.delete(cred.id, q)).rejects.toBeInstanceOf(NF);
    await expect(bc.credentials.mcpOAuthValidate(cred.id, q)).rejects.toBeInstanceOf(NF);
    expect((await bc.list()).data).toEqual([]);
    // A's credential is untouched.
    const still = await a.client.beta.vaults.credentials.retrieve(cred.id, q);
    expect([still.archived_at, still.updated_at]).toEqual([null, cred.updated_at]);
    // The owner gets the clear refusal: only mcp_oauth credentials are validated.
    const message = await badRequest(
      a.client.beta.vaults.credentials.mcpOAuthValidate(cred.id, q),
      'credential_id',
    );
    expect(message).toContain('mcp_oauth credentials only');
  });

  it("session vault_ids: validated against the tenant's live vaults, stored and served", async () => {
    const a = await t.newTenant('sa');
    const b = await t.newTenant('sb');
    const c = a.client;
    const env = await c.beta.environments.create({ name: 'e' });
    const agent = await c.beta.agents.create({ name: 'a', model: 'claude-sonnet-4-5' });
    const v1 = await c.beta.vaults.create({ display_name: 'one' });
    const v2 = await c.beta.vaults.create({ display_name: 'two' });
    const gone = await c.beta.vaults.create({ display_name: 'archived' });
    await c.beta.vaults.archive(gone.id);
    const foreign = await b.client.beta.vaults.create({ display_name: 'b' });
    const create = (vault_ids: string[]) =>
      c.beta.sessions.create({ agent: agent.id, environment_id: env.id, vault_ids });
    await badRequest(create([v1.id, 'vlt_missing']), 'vault_ids[1]');
    await badRequest(create([gone.id]), 'vault_ids[0]');
    await badRequest(create([v1.id, foreign.id]), 'vault_ids[1]');
    expect((await c.beta.sessions.list()).data).toEqual([]);

    const s = await create([v1.id, v2.id]);
    expect(s.vault_ids).toEqual([v1.id, v2.id]);
    expect((await c.beta.sessions.retrieve(s.id)).vault_ids).toEqual([v1.id, v2.id]);
    await badRequest(c.beta.sessions.update(s.id, { vault_ids: [foreign.id] }), 'vault_ids[0]');
    expect((await c.beta.sessions.update(s.id, { vault_ids: [v2.id] })).vault_ids).toEqual([v2.id]);
    expect((await c.beta.sessions.retrieve(s.id)).vault_ids).toEqual([v2.id]);
  });
});
