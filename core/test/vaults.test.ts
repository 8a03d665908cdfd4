/**
 * VaultService on the embedded store, called directly (the egress and MCP proxies will call
 * `credentialForHost` and `credentialsOf` the same way):
 * - lookup by hostname (case and a trailing dot ignored), first matching vault in the session's
 *   order, oldest credential first; another tenant's vault never matches;
 * - no cache: a rotation made through a second service instance (another process on the same
 *   store) is what the next lookup returns; archived and deleted credentials and vaults stop
 *   matching at once;
 * - the 20-credential limit holds under concurrent creates;
 * - the stored document holds the secrets only sealed.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openEmbeddedStore, type EmbeddedStore } from '../src/store/embedded/documentStore.js';
import { SecretBox } from '../src/crypto.js';
import { openCollections, singleStore, type Collections } from '../src/store/collections.js';
import { VaultService } from '../src/vaults/vaults.js';

const ROOT = 'core-vault-test-root-secret-0123456789abcdef';
let store: EmbeddedStore;
let c: Collections;
let vaults: VaultService;
beforeEach(async () => {
  store = await openEmbeddedStore({});
  c = openCollections(singleStore(store));
  vaults = new VaultService(c, new SecretBox(ROOT));
});
afterEach(async () => {
  await store.close();
});

const bearer = (token: string, url: string) => ({
  auth: { type: 'static_bearer' as const, token, mcp_server_url: url },
});

describe('VaultService.credentialForHost', () => {
  it('matches by hostname in vault order, per tenant, and reads every change live', async () => {
    const v1 = await vaults.create('t1', { display_name: 'one' });
    const v2 = await vaults.create('t1', { display_name: 'two' });
    const a = await vaults.createCredential('t1', v1.id, bearer('tok-a', 'https://API.x.test/mcp'));
    const b = await vaults.createCredential('t1', v2.id, bearer('tok-b', 'https://api.x.test/'));
    const id = async (ids: string[], host = 'api.x.test', tenant = 't1') =>
      (await vaults.credentialForHost(tenant, ids, host))?.credential_id ?? null;

    expect(await vaults.credentialForHost('t1', [v1.id], 'Api.X.test.')).toEqual({
      credential_id: a.id,
      vault_id: v1.id,
      type: 'static_bearer',
      auth: { type: 'static_bearer', mcp_server_url: 'https://API.x.test/mcp' },
      secrets: { token: 'tok-a' },
    });
    expect(await id([v2.id, v1.id])).toBe(b.id);
    expect(await id([v1.id], 'x.test')).toBeNull();
    expect(await id([v1.id, v2.id], 'api.x.test', 't2')).toBeNull();
    expect(await id([])).toBeNull();

    // Another process on the same store rotates the token: the next lookup sees it.
    const other = new VaultService(c, new SecretBox(ROOT));
    await other.updateCredential('t1', v1.id, a.id, {
      auth: { type: 'static_bearer', token: 'tok-a2' },
    });
    expect((await vaults.credentialForHost('t1', [v1.id], 'api.x.test'))?.secrets).toEqual({
      token: 'tok-a2',
    });

    await other.archiveCredential('t1', v1.id, a.id);
    expect(await id([v1.id, v2.id])).toBe(b.id);
    await other.archive('t1', v2.id);
    expect(await id([v1.id, v2.id])).toBeNull();
    const v3 = await vaults.create('t1', { display_name: 'three' });
    await vaults.createCredential('t1', v3.id, bearer('tok-c', 'https://api.x.test/'));
    await other.remove('t1', v3.id);
    expect(await id([v3.id])).toBeNull();
    expect(await c.vaultCredentials.find('t1', { vault_id: v3.id })).toEqual([]);
  });

  it('stores secrets only sealed; a different root secret cannot open them', async () => {
    const v = await vaults.create('t1', { display_name: 'sealed' });
    const cr = await vaults.createCredential('t1', v.id, {
      auth: {
        type: 'mcp_oauth',
        access_token: 'acc-secret',
        mcp_server_url: 'https://o.test/',
        refresh: {
          client_id: 'cid',
          refresh_token: 'ref-secret',
          token_endpoint: 'https://o.test/token',
          token_endpoint_auth: { type: 'client_secret_basic', client_secret: 'cs-secret' },
        },
      },
    });
    const raw = JSON.stringify(await c.vaultCredentials.get('t1', cr.id));
    for (const s of ['acc-secret', 'ref-secret', 'cs-secret']) expect(raw).not.toContain(s);
    expect((await vaults.credentialForHost('t1', [v.id], 'o.test'))?.secrets).toEqual({
      access_token: 'acc-secret',
      refresh_token: 'ref-secret',
      client_secret: 'cs-secret',
    });
    const wrongRoot = new VaultService(c, new SecretBox(`${ROOT}-other`));
    await expect(wrongRoot.credentialForHost('t1', [v.id], 'o.test')).rejects.toThrow();
  });

  it('at most 20 credentials per vault, also under concurrent creates', async () => {
    const v = await vaults.create('t1', { display_name: 'full' });
    const results = await Promise.allSettled(
      Array.from({ length: 25 }, (_, i) =>
        vaults.createCredential('t1', v.id, bearer(`t${i}`, `https://h${i}.test/`)),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled').length).toBe(20);
    const refused = results.filter((r) => r.status === 'rejected') as PromiseRejectedResult[];
    expect(refused.map((r) => (r.reason as Error).message)).toEqual(
      Array(5).fill(expect.stringContaining('vault_id')),
    );
    expect(await c.vaultCredentials.count('t1', { vault_id: v.id })).toBe(20);
  });
});
