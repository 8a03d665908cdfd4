/**
 * Configuration sections of what the platform does on a tenant's behalf: egress (private hosts,
 * extra CAs), skill sources, the MCP proxy, memory search, deployments, dreams and outbound
 * webhooks. Schemas only; core/src/config/schema.ts reads them. Proved by core/test/egress.test.ts,
 * core/test/proxy.intercept.test.ts, test/e2e/skills/skill-sources.test.ts and
 * test/e2e/webhooks/webhooks-endpoints.test.ts ('checked at start-up, without echoing the key').
 */
import { Type } from '@sinclair/typebox';
import { parsePrivateHostRules } from '../egress/policy.js';
import { custom, group, int, needs, nullable, path, section, str } from './schema.js';

const PrivateHostRules = Type.Array(
  Type.Object({ host: Type.String(), port: Type.Union([Type.Integer(), Type.Null()]) }),
);

export const EgressSection = section({
  egress: section({
    allowPrivateHosts: custom(
      PrivateHostRules,
      'EGRESS_ALLOW_PRIVATE_HOSTS',
      (raw, ctx) => {
        const r = parsePrivateHostRules(raw);
        ctx.problems.push(...r.problems);
        return r.rules;
      },
      {
        default: [],
        description:
          "comma-separated `host`, `host:port`, `ip:port` or `[ipv6]:port`: the only way to open a private, loopback, link-local, CGNAT or metadata destination for requests made on a tenant's behalf (sandbox proxy, web tools, custom http tools, tenants' model card `base_url`). A name entry matches the requested name, an IP entry the resolved address; with a port, only that port. It opens the host to every tenant",
      },
    ),
    caCertsFile: nullable(
      path('EGRESS_CA_CERTS', {
        description:
          'a PEM file of extra certificates the egress proxy and the MCP proxy trust for upstream TLS (private upstreams, tests)',
      }),
    ),
  }),
  skillSources: section({
    allowHosts: custom(
      PrivateHostRules,
      'SKILL_SOURCES_ALLOW_HOSTS',
      (raw, ctx) => {
        const r = parsePrivateHostRules(raw);
        ctx.problems.push(
          ...r.problems.map((m) =>
            m.replace('EGRESS_ALLOW_PRIVATE_HOSTS', 'SKILL_SOURCES_ALLOW_HOSTS'),
          ),
        );
        return r.rules;
      },
      {
        default: [],
        description:
          'same syntax as `EGRESS_ALLOW_PRIVATE_HOSTS`: private or loopback hosts skill sources may use (intranet sources). Every other source must use https and resolve to a public address; `EGRESS_ALLOW_PRIVATE_HOSTS` also opens a host for skill sources. Upstream TLS trusts the system store plus `EGRESS_CA_CERTS`',
      },
    ),
  }),
  mcpProxy: section({
    maxBodyBytes: int('MCP_PROXY_MAX_BODY_BYTES', {
      default: 4 * 1024 ** 2,
      min: 1,
      max: 32 * 1024 ** 2,
      docDefault: '4 MiB (at most 32 MiB)',
      description: 'largest request body the MCP proxy forwards; over it, 413',
    }),
  }),
});

export const MemorySection = section({
  memorySearch: section({
    embeddingModel: nullable(
      str('MEMORY_EMBEDDING_MODEL', {
        trim: true,
        docDefault: 'empty',
        description:
          "the model card (`model_id`: the store's tenant's card first, else the operator's) memory stores embed with when they name none; empty: lexical search",
      }),
    ),
    maxOpenIndexes: int('MEMORY_SEARCH_MAX_OPEN_INDEXES', {
      default: 64,
      min: 1,
      max: 10_000,
      description:
        'memory search indexes one process keeps open (least recently searched dropped first)',
    }),
  }),
});

export const SchedulesSection = section({
  deployments: section({
    tickMs: int('DEPLOYMENT_TICK_MS', {
      default: 5_000,
      min: 0,
      max: 60_000,
      description: 'how often workers fire due deployment schedules (0: never)',
    }),
  }),
  dreams: section({
    maxRunMs: int('DREAM_MAX_RUN_MS', {
      default: 600_000,
      min: 1,
      max: 24 * 3600_000,
      description: 'longest a dream may run before it fails with `timeout`',
    }),
    scanMs: int('DREAM_SCAN_MS', {
      default: 10_000,
      min: 0,
      max: 600_000,
      description:
        'how often workers restart dreams whose command was lost or whose worker died (0: never)',
    }),
  }),
  evals: section({
    scanMs: int('EVAL_SCAN_MS', {
      default: 10_000,
      min: 0,
      max: 600_000,
      description:
        'how often workers re-drive eval cases whose command was lost or whose worker died, and fill free slots (0: never)',
    }),
    tenantConcurrency: int('EVAL_TENANT_CONCURRENCY', {
      default: 16,
      min: 1,
      max: 1_000,
      description:
        "most eval cases of one tenant that run at once, across all of the tenant's runs",
    }),
    claimMs: int('EVAL_CLAIM_MS', {
      default: 30_000,
      min: 1_000,
      max: 600_000,
      description:
        "how long a worker's claim on an eval case it is starting or judging holds without renewal (renewed every third of it); a dead worker's case is taken over after it",
    }),
    caseTimeoutMs: int('EVAL_CASE_TIMEOUT_MS', {
      default: 1_800_000,
      min: 1_000,
      max: 24 * 3600_000,
      description: 'longest an eval case may run before it is interrupted and errored',
    }),
  }),
});

const WEBHOOK_URL = 'SVC_MANAGED_AGENTS_WEBHOOK_URL';
const WEBHOOK_KEY = 'SVC_MANAGED_AGENTS_WEBHOOK_SIGNING_KEY';

export const WebhooksSection = section({
  webhooks: section({
    deploymentEndpoint: group(
      {
        url: str(WEBHOOK_URL, {
          default: null,
          pattern: /^https?:\/\/[^\s/]/,
          problem: `${WEBHOOK_URL} must be an http(s) URL`,
          check: needs(WEBHOOK_KEY),
          description: "the deployment-level webhook endpoint: every workspace's events",
        }),
        signingKey: str(WEBHOOK_KEY, {
          default: null,
          secret: true,
          pattern: /^whsec_(?:[A-Za-z0-9+/]{4}){4,}(?:[A-Za-z0-9+/]{2,3}=*)?$/,
          problem: `${WEBHOOK_KEY} must be whsec_ followed by a base64 key (at least 12 bytes)`,
          description: "that endpoint's Standard Webhooks key (`whsec_…`, required with the URL)",
        }),
      },
      { when: ['url', 'signingKey'] },
    ),
    organizationId: nullable(
      str('SVC_MANAGED_AGENTS_ORGANIZATION_ID', {
        docDefault: 'unset (the workspace id)',
        description: 'the organization id in webhook payloads',
      }),
    ),
    scanMs: int('WEBHOOK_SCAN_MS', {
      default: 5_000,
      min: 0,
      max: 600_000,
      description: 'how often workers look for webhook retries that are due (0: never)',
    }),
    timeoutMs: int('WEBHOOK_TIMEOUT_MS', {
      default: 10_000,
      min: 100,
      max: 120_000,
      description: "one delivery attempt's timeout",
    }),
  }),
});
