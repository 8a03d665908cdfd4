/**
 * The configuration schema (core/src/config): what loadConfig returns is the inferred Config
 * type's shape; every setting is read by its kind's parser, whose problem names the variable;
 * redactedConfig (the only form in which the config is logged) holds no secret.
 */
import { Value } from '@sinclair/typebox/value';
import { describe, expect, it } from 'vitest';
import {
  CONFIG_SECTIONS,
  ConfigError,
  ConfigSchema,
  loadConfig,
  redactedConfig,
} from '../src/config/config.js';
import { docRows, settingsByEnv } from '../src/config/schema.js';

const DATA_DIR = '/tmp/agentfleet-config-schema-test';
const SECRETS = {
  API_KEY: 'op-key-0123456789-distinct',
  PLATFORM_ROOT_SECRET: 'root-secret-0123456789-0123456789-distinct',
  ANTHROPIC_API_KEY: 'vendor-key-0123456789-distinct',
  WEB_SEARCH_API_KEY: 'search-key-0123456789-distinct',
  NOMAD_TOKEN: 'nomad-token-0123456789-distinct',
  SVC_MANAGED_AGENTS_WEBHOOK_SIGNING_KEY: `whsec_${Buffer.from('signing-key-0123456789').toString('base64')}`,
  CONSOLE_SESSION_SECRET: 'console-secret-0123456789-0123456789-distinct',
  OIDC_CLIENT_SECRET: 'oidc-client-secret-0123456789-distinct',
  GITHUB_OAUTH_CLIENT_SECRET: 'github-client-secret-0123456789-distinct',
  GITHUB_APP_PRIVATE_KEY: 'github-app-private-key-0123456789-distinct',
  GITHUB_CLIENT_SECRET: 'github-app-client-secret-0123456789-distinct',
  GITHUB_WEBHOOK_SECRET: 'github-webhook-secret-0123456789-distinct',
  LINEAR_CLIENT_SECRET: 'linear-client-secret-0123456789-distinct',
  LINEAR_WEBHOOK_SECRET: 'linear-webhook-secret-0123456789-distinct',
  SLACK_CLIENT_SECRET: 'slack-client-secret-0123456789-distinct',
  SLACK_SIGNING_SECRET: 'slack-signing-secret-0123456789-distinct',
  BILLING_ANTHROPIC_ADMIN_KEY: 'sk-ant-admin01-billing-0123456789-distinct',
  BILLING_OPENAI_ADMIN_KEY: 'sk-admin-billing-0123456789-distinct',
  BILLING_JSONL_TOKEN: 'jsonl-billing-token-0123456789-distinct',
};
/** The identity providers' other settings (each client secret needs them). */
const IDP = {
  PUBLIC_URL: 'https://agents.example',
  OIDC_ISSUER: 'https://idp.example',
  OIDC_CLIENT_ID: 'agentfleet',
  GITHUB_OAUTH_CLIENT_ID: 'Iv1.example',
};
const FULL = {
  DATA_DIR,
  ...SECRETS,
  ...IDP,
  WEB_SEARCH_URL: 'https://search.example/api',
  NOMAD_ADDR: 'http://127.0.0.1:4646',
  SVC_MANAGED_AGENTS_WEBHOOK_URL: 'https://hooks.example/ops',
  KAFKA_BROKERS: 'k1:9092,k2:9092',
  MONGODB_URL: 'mongodb://admin:mongo-pass-distinct@db.example:27017/agentfleet',
  REDIS_URL: 'redis://:redis-pass-distinct@cache.example:6379',
  STORE_BACKENDS: JSON.stringify({
    backends: { eu: 'mongodb://eu:eu-pass-distinct@eu.example/agentfleet' },
    tenants: { tnt_a: 'eu' },
  }),
  METRICS_LISTEN: '127.0.0.1:9464',
  SANDBOX_MAX_PROCESSES: '64',
};
const problemsOf = (env: Record<string, string>): string[] => {
  try {
    loadConfig('all', { DATA_DIR, ...env });
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
};
const settings = [...settingsByEnv(CONFIG_SECTIONS.map((s) => s.schema))];

describe('configuration schema', () => {
  it('loadConfig returns the shape of the inferred Config type (defaults and every group set)', () => {
    for (const env of [{ DATA_DIR, ...SECRETS, ...IDP }, FULL]) {
      const config = loadConfig('all', env);
      expect([...Value.Errors(ConfigSchema, config)].map((e) => `${e.path}: ${e.message}`)).toEqual(
        [],
      );
    }
  });

  it("every setting is read by its kind's parser, and a bad value is a problem naming it", () => {
    const bad = { int: 'x', bool: 'maybe', enum: 'bogus' } as Record<string, string>;
    let checked = 0;
    for (const [env, s] of settings) {
      if (!(s.kind in bad)) continue;
      const expected =
        s.kind === 'int'
          ? `${env} must be an integer between ${s.min} and ${s.max} (got 'x')`
          : (s.problem ??
            (s.kind === 'bool' ? `${env} must be 'true' or 'false'` : `${env} must be `));
      const problems = problemsOf({ [env]: bad[s.kind]! });
      expect(
        problems.some((p) => p.startsWith(expected)),
        `${env}: ${problems.join('; ')}`,
      ).toBe(true);
      checked++;
    }
    expect(checked).toBeGreaterThan(50);
  });

  it('redactedConfig replaces every secret with "[redacted]", cuts URL credentials, omits unset secrets', () => {
    const logged = JSON.stringify(redactedConfig(loadConfig('all', FULL)));
    for (const secret of [
      ...Object.values(SECRETS),
      'mongo-pass-distinct',
      'redis-pass-distinct',
      'eu-pass-distinct',
    ])
      expect(logged).not.toContain(secret);
    const r = redactedConfig(loadConfig('all', FULL)) as any;
    expect(r.operatorKeyHash).toBe('[redacted]');
    expect(r.rootSecret).toBe('[redacted]');
    expect(r.oidcClientSecret).toBe('[redacted]');
    expect(r.githubOAuthClientSecret).toBe('[redacted]');
    expect(r.vendor).toEqual({ apiKey: '[redacted]' });
    expect(r.sandbox.webSearch).toEqual({
      url: 'https://search.example/api',
      apiKey: '[redacted]',
    });
    expect(r.sandbox.nomad.token).toBe('[redacted]');
    expect(r.webhooks.deploymentEndpoint.signingKey).toBe('[redacted]');
    expect(r.infra.mongodbUrl).toBe('mongodb://[redacted]@db.example:27017/agentfleet');
    expect(r.infra.redisUrl).toBe('redis://[redacted]@cache.example:6379');
    expect(r.fleet.storeBackends.backends.eu).toBe('mongodb://[redacted]@eu.example/agentfleet');
    expect(r.port).toBe(8080);
    const unset = redactedConfig(loadConfig('all', { DATA_DIR })) as any;
    expect('rootSecret' in unset || 'operatorKeyHash' in unset).toBe(false);
    expect(unset.vendor).toBeNull();
  });

  it('an identity provider needs all its settings and PUBLIC_URL; its URLs are https', () => {
    expect(problemsOf({ OIDC_ISSUER: 'https://idp.example' })).toEqual([
      'OIDC_ISSUER, OIDC_CLIENT_ID and OIDC_CLIENT_SECRET are set together',
      'PUBLIC_URL is required with an identity provider (OIDC_* or GITHUB_OAUTH_*): it is where sign-in callbacks return',
    ]);
    expect(problemsOf({ ...IDP, ...SECRETS, OIDC_ISSUER: 'http://idp.example' })).toEqual([
      'OIDC_ISSUER must be an https:// URL (the OpenID provider, discovered at /.well-known/openid-configuration)',
    ]);
    expect(problemsOf({ GITHUB_OAUTH_CLIENT_ID: 'x' })).toContain(
      'GITHUB_OAUTH_CLIENT_ID and GITHUB_OAUTH_CLIENT_SECRET are set together',
    );
  });

  it('the secret settings are the deployment secrets, marked in the docs table', () => {
    const secret = CONFIG_SECTIONS.flatMap((s) => docRows(s.schema))
      .filter((r) => r.secret)
      .map((r) => r.env);
    expect(secret.sort()).toEqual(Object.keys(SECRETS).sort());
  });
});
