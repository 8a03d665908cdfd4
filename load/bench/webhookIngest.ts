/**
 * Section k: webhook ingest → session start. Its own in-process platform (embedded adapters)
 * with the GitHub integration configured against the GitHub fixture
 * (test/kit/fixtures/githubIntegration.ts: a GitHub App's OAuth, installation tokens, issue
 * comments, signed webhooks, on 127.0.0.1 with a self-signed certificate), installed by OAuth
 * as a browser would and given a publication for the fixture's org.
 *
 * Measured, one at a time: a signed `issue_comment` mentioning the App on a fresh issue, from
 * the POST to /v1/svc/integrations/github/webhook to (a) its 202 and (b) the new session's
 * `user.message` being appended (the session exists before its first event: the worker creates
 * it, then sends). (b) is taken by an EventLog append hook in this process (appended.ts), so it
 * carries no polling interval. Each delivery's turn (zero-latency model) and its reply comment
 * at the fixture finish, untimed, before the next POST.
 * Baseline, alternating with it on the same platform: what a client does for the same result,
 * `POST /v1/sessions` then `POST /v1/sessions/:id/events` (user.message), to the 202 of the
 * second and to the same append hook. The difference is the webhook path's own cost: signature,
 * install and delivery-id checks, the bus hop and the worker's thread and publication lookups.
 */
import https from 'node:https';
import { readFileSync } from 'node:fs';
import { startBenchPlatform, type BenchPlatform } from './context.js';
import { request, svc } from './svc.js';
import { userText, watchAppends } from './appended.js';
import { fmt, nowMs, percentile, printSection, printTable, sleep, summarize } from './stats.js';

/** Deliveries timed per path (each one a new issue, so a new session). */
const DELIVERIES = 30;
/** Untimed deliveries per path first (connections, caches, the App's token and slug). */
const WARMUP = 3;
const WAIT_MS = 20_000;
const HOOK = '/v1/svc/integrations/github/webhook';
/** The public origin the platform is told; the OAuth callback is replayed against the platform. */
const PUBLIC_URL = 'https://agents.example';

/** The parts of test/kit/fixtures/githubIntegration.ts the section uses. */
interface GithubFixture {
  url: string;
  apiUrl: string;
  certFile: string;
  appId: string;
  slug: string;
  clientId: string;
  clientSecret: string;
  webhookSecret: string;
  privateKeyPem: string;
  comments: unknown[];
  webhook(event: string, payload: object): { headers: Record<string, string>; body: string };
  close(): Promise<void>;
}

interface FixtureModule {
  startGithubIntegration(): Promise<GithubFixture>;
  githubPlatformEnv(f: GithubFixture, publicUrl: string): Record<string, string>;
  issueCommentPayload(i: {
    owner: string;
    repo: string;
    number: number;
    title: string;
    body: string;
    user: { login: string; id: number };
    installationId: number;
  }): object;
}

/** GET `url` at the fixture (trusting its certificate) without following a redirect. */
function fixtureRedirect(url: string, certFile: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ca: readFileSync(certFile) }, (res) => {
      res.resume();
      const location = res.headers.location;
      if (res.statusCode !== 302 || !location)
        reject(new Error(`bench: fixture authorize answered ${res.statusCode}, not a redirect`));
      else resolve(location);
    });
    req.on('error', reject);
  });
}

/** install → the fixture's authorize (it approves at once) → the platform's callback. */
async function installByOAuth(p: BenchPlatform, gh: GithubFixture): Promise<void> {
  const start = (await svc(p, 'GET', '/v1/svc/integrations/github/install')) as { url: string };
  const callback = new URL(await fixtureRedirect(start.url, gh.certFile));
  const done = await request(p, 'GET', `${callback.pathname}${callback.search}`);
  if (done.status !== 200) throw new Error(`bench: OAuth callback answered ${done.status}`);
}

async function ok<T = any>(p: BenchPlatform, method: string, path: string, body?: unknown) {
  const r = await p.json<T>(method, path, body);
  if (r.status < 200 || r.status >= 300)
    throw new Error(`${method} ${path}: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

/** Waits (untimed, bounded) until `cond` holds. */
async function until(cond: () => boolean, what: string): Promise<void> {
  const end = nowMs() + WAIT_MS;
  while (!cond()) {
    if (nowMs() > end) throw new Error(`bench: no ${what} within ${WAIT_MS} ms`);
    await sleep(5);
  }
}

export interface WebhookIngestFigures {
  webhookAcceptedMs: number[];
  webhookSessionMs: number[];
  apiAcceptedMs: number[];
  apiSessionMs: number[];
}

export async function webhookIngestSection(): Promise<WebhookIngestFigures> {
  printSection(
    'k. Webhook ingest → session start (GitHub issue_comment mention) beside POST /v1/sessions + user.message',
  );
  const fixtureUrl = new URL('../../test/kit/fixtures/githubIntegration.ts', import.meta.url);
  const fx = (await import(fixtureUrl.href)) as FixtureModule;
  const gh = await fx.startGithubIntegration();
  const figures: WebhookIngestFigures = {
    webhookAcceptedMs: [],
    webhookSessionMs: [],
    apiAcceptedMs: [],
    apiSessionMs: [],
  };
  let p: BenchPlatform | undefined;
  try {
    p = await startBenchPlatform({
      ...fx.githubPlatformEnv(gh, PUBLIC_URL),
      INTEGRATIONS_WEBHOOKS_PER_ADDRESS_PER_MINUTE: '100000',
      INTEGRATIONS_WEBHOOKS_PER_TENANT_PER_MINUTE: '100000',
    });
    const platform = p;
    await installByOAuth(platform, gh);
    const { agentId, environmentId } = await platform.sessions(0);
    await svc(platform, 'POST', '/v1/svc/integrations/github/publications', {
      agent: agentId,
      environment_id: environmentId,
      workspace: { owner: 'acme' },
    });
    const watch = watchAppends(platform.server.platform.events);
    try {
      let issue = 1000;
      const viaWebhook = async (timed: boolean) => {
        const number = issue++;
        const marker = `bench-issue-${number}`;
        const signed = gh.webhook(
          'issue_comment',
          fx.issueCommentPayload({
            owner: 'acme',
            repo: 'widgets',
            number,
            title: `Issue ${number}`,
            body: `@${gh.slug} ${marker} please look`,
            user: { login: 'octocat', id: 1 },
            installationId: 7001,
          }),
        );
        const replies = gh.comments.length;
        const message = watch.next(
          (_sid, e) => userText(e).includes(marker),
          WAIT_MS,
          `user.message for ${marker}`,
        );
        message.catch(() => {});
        const t0 = nowMs();
        const r = await request(platform, 'POST', HOOK, signed.headers, signed.body);
        const accepted = nowMs() - t0;
        if (r.status !== 202) throw new Error(`bench: webhook answered ${r.status} ${r.text}`);
        const appended = await message;
        if (timed) {
          figures.webhookAcceptedMs.push(accepted);
          figures.webhookSessionMs.push(appended.at - t0);
        }
        // The turn and its reply comment finish before the next delivery (untimed).
        await until(() => gh.comments.length > replies, `reply comment for ${marker}`);
      };
      const viaApi = async (timed: boolean) => {
        const marker = `bench-api-${issue++}`;
        const message = watch.next(
          (_sid, e) => userText(e).includes(marker),
          WAIT_MS,
          `user.message for ${marker}`,
        );
        message.catch(() => {});
        const t0 = nowMs();
        const s = await ok<{ id: string }>(platform, 'POST', '/v1/sessions', {
          agent: agentId,
          environment_id: environmentId,
        });
        const idle = watch.next(
          (sid, e) => sid === s.id && e.type === 'session.status_idle',
          WAIT_MS,
          `session.status_idle of ${s.id}`,
        );
        idle.catch(() => {});
        const r = await platform.json('POST', `/v1/sessions/${s.id}/events`, {
          events: [{ type: 'user.message', content: [{ type: 'text', text: marker }] }],
        });
        const accepted = nowMs() - t0;
        if (r.status !== 202) throw new Error(`bench: POST events answered ${r.status}`);
        const appended = await message;
        if (timed) {
          figures.apiAcceptedMs.push(accepted);
          figures.apiSessionMs.push(appended.at - t0);
        }
        await idle;
      };
      for (let i = 0; i < WARMUP; i++) {
        await viaWebhook(false);
        await viaApi(false);
      }
      // Alternating, so both paths see the same machine.
      for (let i = 0; i < DELIVERIES; i++) {
        await viaWebhook(true);
        await viaApi(true);
      }
    } finally {
      watch.close();
    }
    const list = await ok<{ data: Array<{ metadata?: Record<string, string> }> }>(
      platform,
      'GET',
      '/v1/sessions?limit=100',
    );
    const started = list.data.filter((s) => s.metadata?.integration === 'github').length;

    const row = (name: string, samples: number[]) => {
      const s = summarize(samples);
      const sorted = Float64Array.from(samples).sort();
      return [name, String(s.n), fmt(s.p50), fmt(percentile(sorted, 95)), fmt(s.max)];
    };
    printTable(
      `Webhook ingest → session start (sequential, ${DELIVERIES} each after ${WARMUP} untimed, alternating; embedded adapters)`,
      ['measurement', 'n', 'p50 ms', 'p95 ms', 'max ms'],
      [
        row('baseline: POST /v1/sessions + POST …/events → 202', figures.apiAcceptedMs),
        row('webhook: POST …/github/webhook → 202', figures.webhookAcceptedMs),
        row('baseline: POST /v1/sessions + POST …/events → user.message', figures.apiSessionMs),
        row('webhook: POST → session with its user.message', figures.webhookSessionMs),
      ],
      [
        '→ user.message: when the event log append hook in this process saw the event (durable, published)',
        `sessions the webhooks started (GET /v1/sessions, metadata.integration = github): ${started} of ${DELIVERIES + WARMUP}`,
        "the webhook's 202 is answered once the event is on the bus; the worker then creates the session and sends its user.message",
      ],
    );
    return figures;
  } finally {
    await p?.close();
    await gh.close();
  }
}
