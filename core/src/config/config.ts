/**
 * The configuration: one typed object, parsed once at start from the environment. Nothing else
 * reads process.env (docs/configuration.md lists the few variables read elsewhere).
 *
 * Guarantees:
 * - One schema. Each section is a TypeBox schema (process.ts, http.ts, sandbox.ts, storage.ts,
 *   services.ts, integrations.ts, billing.ts, console.ts) whose settings carry their variable,
 *   default, description and secrecy; `Config` is inferred from them, loadConfig reads every
 *   variable through them, and the docs table is generated from them
 *   (core/test/config.docs.test.ts fails when docs/configuration.md differs; `npm run
 *   config:docs` writes it).
 * - Validated: every variable by its kind (integers within their range, booleans, one of
 *   named values, URL and key patterns, host lists, JSON, host:port; core/src/config/schema.ts),
 *   then the rules between settings (fleet mode needs API_KEY and PLATFORM_ROOT_SECRET, roles
 *   other than `all` need Kafka, MongoDB and Redis, store backends need MongoDB, timeouts and
 *   quotas ordered, MCP_SIGNING_KEY refused, SANDBOX_HOST_UID/GID only under root).
 * - A bad value stops the start: loadConfig throws a ConfigError listing every problem (not
 *   only the first), the CLI prints it and exits 1 before anything is connected or written
 *   (test/e2e/server/startup.test.ts 'lists every configuration problem').
 * - Secrets are never logged: a problem never quotes a secret's value, and the config is logged
 *   only as redactedConfig (every `secret` setting "[redacted]", URL credentials cut out), once
 *   at start (core/test/config.schema.test.ts; test/e2e/credentials/secrets-scan.test.ts searches
 *   every log line for every secret; test/e2e/webhooks/webhooks-endpoints.test.ts and
 *   test/e2e/server/mcp-signing-key.test.ts check the problems do not echo keys).
 * - Pure: loadConfig reads only the environment it is given (no file is read, created or
 *   written). The secrets an embedded data dir may hold instead of the environment (root
 *   secret, operator key hash) are resolved and created by dataDir.ts, after start-up checks
 *   passed (test/e2e/server/operator-key.test.ts 'loadConfig writes nothing').
 */
import { Type, type Static, type TObject } from '@sinclair/typebox';
import { BillingSection } from './billing.js';
import { ConsoleSection } from './console.js';
import { IntegrationsSection } from './integrations.js';
import { HttpSection } from './http.js';
import {
  LimitsSection,
  ProcessSection,
  SecretsSection,
  TurnsSection,
  type Role,
} from './process.js';
import { SandboxSection } from './sandbox.js';
import { readContext, readSchema, redact, settingsByEnv, type Env } from './schema.js';
import { EgressSection, MemorySection, SchedulesSection, WebhooksSection } from './services.js';
import { FilesSection, FleetSection } from './storage.js';

export type { Role } from './process.js';
export type { StoreBackends } from './storeBackends.js';

/** The sections in the order they are read (and their problems listed) and documented. */
export const CONFIG_SECTIONS: { title: string; schema: TObject }[] = [
  { title: 'Process', schema: ProcessSection },
  { title: 'Operator key and secrets', schema: SecretsSection },
  { title: 'Models and turns', schema: TurnsSection },
  { title: 'Request limits', schema: LimitsSection },
  { title: 'Connections and streams', schema: HttpSection },
  { title: 'Sandboxes', schema: SandboxSection },
  { title: 'Files, outputs and the object store', schema: FilesSection },
  { title: 'Egress, skill sources and the MCP proxy', schema: EgressSection },
  { title: 'Memory search', schema: MemorySection },
  { title: 'Deployments, dreams and evals', schema: SchedulesSection },
  { title: 'Webhooks', schema: WebhooksSection },
  { title: 'Integrations', schema: IntegrationsSection },
  { title: 'Cost report billing', schema: BillingSection },
  { title: 'Fleet mode', schema: FleetSection },
  { title: 'Console', schema: ConsoleSection },
];

export const ConfigSchema = Type.Object({
  ...ProcessSection.properties,
  ...SecretsSection.properties,
  ...TurnsSection.properties,
  ...LimitsSection.properties,
  ...HttpSection.properties,
  ...SandboxSection.properties,
  ...FilesSection.properties,
  ...EgressSection.properties,
  ...MemorySection.properties,
  ...SchedulesSection.properties,
  ...WebhooksSection.properties,
  ...IntegrationsSection.properties,
  ...BillingSection.properties,
  ...FleetSection.properties,
  ...ConsoleSection.properties,
});

export type Config = Static<typeof ConfigSchema>;

const SETTINGS = settingsByEnv(CONFIG_SECTIONS.map((s) => s.schema));

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  }
}

/** The config fields an embedded data dir may hold instead of the environment. */
export type DataDirSecret = 'rootSecret' | 'operatorKeyHash';
/** What loadConfig returns: those fields only as the environment sets them (null: not set; dataDir.ts resolves them). */
export type ParsedConfig = Omit<Config, DataDirSecret> & {
  rootSecret: string | null;
  operatorKeyHash: string | null;
};

export function loadConfig(role: Role, env: Env = process.env): ParsedConfig {
  const ctx = readContext(env, role, SETTINGS);
  const config = Object.assign({}, ...CONFIG_SECTIONS.map((s) => readSchema(s.schema, ctx)));
  if (ctx.problems.length) throw new ConfigError(ctx.problems);
  return config as ParsedConfig;
}

/** The config for logs: every secret setting "[redacted]" (omitted when unset), URL credentials cut out. */
export function redactedConfig(config: Config | ParsedConfig): Record<string, unknown> {
  return redact(ConfigSchema, config) as Record<string, unknown>;
}
