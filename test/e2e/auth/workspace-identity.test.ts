/**
 * Settings the SDK sends that a tenant-per-workspace deployment can only honour one way
 * ("accepted means honoured"):
 * - `workspace_id` (header `anthropic-workspace-id`): a key acts on its own tenant only, so
 *   naming it is accepted and naming another workspace is 403; every authenticated response
 *   names the workspace in the same header (the SDK exposes it as `_workspace_id`);
 * - agent `execution_identity`: `service_account` only; `aws_role` is refused with 400;
 * - environment `scope`: `organization` only; `account` is refused with 400.
 * Through the official TypeScript SDK and plain HTTP.
 */
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';

let t: TestPlatform;
beforeAll(async () => {
  t = await startPlatform({ env: { SANDBOX_DRIVER: 'none' } });
});
afterAll(async () => {
  await t?.close();
});

const fails = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => e as InstanceType<typeof Anthropic.APIError>,
  );

describe('workspace_id', () => {
  it("accepts the key's own workspace, refuses another with 403, and names it in every answer", async () => {
    const { tenantId, apiKey, client } = await t.newTenant('ws');
    const other = await t.newTenant('ws-other');
    const a = await client.beta.agents.create({
      name: 'ws',
      model: 'claude-sonnet-4-5',
      workspace_id: tenantId,
    });
    expect(a.name).toBe('ws');
    const { response } = await client.beta.agents.retrieve(a.id).withResponse();
    expect(response.headers.get('anthropic-workspace-id')).toBe(tenantId);

    const err = await fails(
      client.beta.agents.create({
        name: 'x',
        model: 'claude-sonnet-4-5',
        workspace_id: other.tenantId,
      }),
    );
    expect(err).toBeInstanceOf(Anthropic.PermissionDeniedError);
    expect(err!.message).toContain('anthropic-workspace-id');
    const listed = await client.beta.agents.list();
    expect(listed.data.map((x) => x.id)).toEqual([a.id]);
    // The neutral header name is held to the same rule.
    const r = await t.http('/v1/agents', {
      key: apiKey,
      headers: { 'vendor-workspace-id': 'wrk_x' },
    });
    expect(r.status).toBe(403);
    expect(((await r.json()) as any).error.type).toBe('forbidden'); // the spec's name (docs/api-semantics.md: errors)
  });
});

describe('execution_identity and environment scope', () => {
  it('aws_role is refused with 400 naming the field; service_account is served', async () => {
    const { client } = await t.newTenant('ident');
    const err = await fails(
      client.beta.agents.create({
        name: 'aws',
        model: 'claude-sonnet-4-5',
        execution_identity: { type: 'aws_role', role_arn: 'arn:aws:iam::123456789012:role/r' },
      }),
    );
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err!.message).toContain('execution_identity.type');
    expect(err!.message).toContain('not supported');
    const a = await client.beta.agents.create({
      name: 'svc',
      model: 'claude-sonnet-4-5',
      execution_identity: { type: 'service_account' },
    });
    expect(a.execution_identity).toEqual({ type: 'service_account' });
    const up = await fails(
      client.beta.agents.update(a.id, {
        version: a.version,
        execution_identity: { type: 'aws_role', role_arn: 'arn:aws:iam::1:role/r' },
      }),
    );
    expect(up).toBeInstanceOf(Anthropic.BadRequestError);
    expect((await client.beta.agents.retrieve(a.id)).version).toBe(a.version);
  });

  it("scope 'account' is refused with 400; 'organization' is served", async () => {
    const { client } = await t.newTenant('scope');
    const err = await fails(client.beta.environments.create({ name: 'acct', scope: 'account' }));
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    expect(err!.message).toContain('scope');
    expect((await client.beta.environments.list()).data).toEqual([]);
    const env = await client.beta.environments.create({ name: 'org', scope: 'organization' });
    expect(env.scope).toBe('organization');
    const up = await fails(client.beta.environments.update(env.id, { scope: 'account' }));
    expect(up).toBeInstanceOf(Anthropic.BadRequestError);
    expect((await client.beta.environments.retrieve(env.id)).scope).toBe('organization');
  });
});
