/**
 * Inbound webhook ingest under hostile input (core/src/integrations/ingest.ts), with the GitHub
 * fixture as the installed provider:
 * - a signed body that is not JSON is a 400; JSON nested past MAX_JSON_DEPTH a 400; a body over
 *   1 MiB a 413; JSON that is not an event (null, [], a string) a 200 `ignored`; never a 5xx;
 * - the per-tenant budget (INTEGRATIONS_WEBHOOKS_PER_TENANT_PER_MINUTE) answers 429 with
 *   Retry-After once spent, for verified events, and forgets the refused delivery id (its
 *   redelivery is not a `duplicate`);
 * - the per-address budget (INTEGRATIONS_WEBHOOKS_PER_ADDRESS_PER_MINUTE) is counted before the
 *   signature is checked: past it even an unsigned request is a 429, not a 401;
 */
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPlatform, type TestPlatform } from '../../kit/harness.js';
import {
  issueCommentPayload,
  githubPlatformEnv,
  startGithubIntegration,
  type GithubIntegrationFixture,
} from '../../kit/fixtures/githubIntegration.js';
import { installByOAuth, postWebhook, PUBLIC_URL } from '../../kit/integrations.js';

const HOOK = '/v1/svc/integrations/github/webhook';
let t: TestPlatform;
let gh: GithubIntegrationFixture;

const comment = (number: number) =>
  gh.webhook(
    'issue_comment',
    issueCommentPayload({
      owner: 'acme',
      repo: 'widgets',
      number,
      title: 't',
      body: `@${gh.slug} hi`,
      user: { login: 'octocat', id: 1 },
      installationId: 7001,
    }),
  );
/** A body signed with the webhook secret, as GitHub would sign it. */
const signedRaw = (body: string) => {
  const s = gh.webhook('issue_comment', {});
  const sig = `sha256=${createHmac('sha256', gh.webhookSecret).update(body).digest('hex')}`;
  return { headers: { ...s.headers, 'x-hub-signature-256': sig }, body };
};

beforeAll(async () => {
  gh = await startGithubIntegration();
  t = await startPlatform({
    env: {
      INTEGRATIONS_WEBHOOKS_PER_ADDRESS_PER_MINUTE: '9',
      INTEGRATIONS_WEBHOOKS_PER_TENANT_PER_MINUTE: '3',
      ...githubPlatformEnv(gh, PUBLIC_URL),
    },
  });
  expect((await installByOAuth(t, 'github', gh.certFile)).status).toBe(200);
}, 60_000);
afterAll(async () => {
  await t?.close();
  await gh?.close();
});

describe('webhook ingest limits', () => {
  it('malformed, deep, huge and non-event bodies get a 4xx or an ignore, never a 5xx', async () => {
    const notJson = await postWebhook(t, HOOK, signedRaw('{"installation":'));
    expect(notJson.status).toBe(400);
    expect(notJson.body.error.message).toMatch(/not JSON/);
    const deep = await postWebhook(t, HOOK, signedRaw(`${'['.repeat(200)}${']'.repeat(200)}`));
    expect(deep.status).toBe(400);
    expect(deep.body.error.message).toMatch(/deeper than/);
    const huge = await postWebhook(t, HOOK, signedRaw(`"${'x'.repeat(1_100_000)}"`));
    expect(huge.status).toBe(413);
    const odd = await postWebhook(t, HOOK, signedRaw('[]'));
    expect(odd.status).toBe(200);
    expect(odd.body.status).toBe('ignored');
  });

  it('the per-tenant budget is a 429 with Retry-After; the per-address one comes before the signature', async () => {
    // Counted per address so far: the non-JSON and the [] request (deep and huge stop at the edge).
    for (const n of [1, 2, 3]) expect((await postWebhook(t, HOOK, comment(n))).status).toBe(202);
    const fourth = comment(4);
    const overTenant = await postWebhook(t, HOOK, fourth);
    expect(overTenant.status).toBe(429);
    expect(overTenant.body.error.message).toMatch(/per minute for this install's tenant/);
    expect(Number(overTenant.headers.get('retry-after'))).toBeGreaterThan(0);
    // The refused delivery's id is not kept: GitHub's redelivery meets the budget again, not
    // the duplicate check (once the budget refills it is handled).
    const redelivered = await postWebhook(t, HOOK, fourth);
    expect(redelivered.status).toBe(429);
    const unsigned = { headers: { 'content-type': 'application/json' }, body: '{}' };
    expect((await postWebhook(t, HOOK, unsigned)).status).toBe(401);
    expect((await postWebhook(t, HOOK, unsigned)).status).toBe(401);
    const overAddress = await postWebhook(t, HOOK, unsigned);
    expect(overAddress.status).toBe(429);
    expect(overAddress.body.error.message).toMatch(/from this address/);
  });
});
