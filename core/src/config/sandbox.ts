/**
 * The sandbox section of the configuration (core/src/config/config.ts): the driver, where local
 * sandboxes live, the web_search backend, Nomad, the host user, limits and packages layers.
 * Schemas only; core/src/config/schema.ts reads them.
 */
import { join } from 'node:path';
import { Type } from '@sinclair/typebox';
import { SandboxHostUserSchema } from './sandboxUser.js';
import { bool, derived, group, int, needs, nullable, oneOf, path, section, str } from './schema.js';

const nomadAddr = (get: (name: string) => unknown) => get('NOMAD_ADDR') as string | null;

export const SandboxSection = section({
  sandbox: section({
    driver: oneOf('SANDBOX_DRIVER', ['local', 'nomad', 'none'], {
      defaultFrom: (ctx) => (nomadAddr(ctx.get) ? 'nomad' : 'local'),
      docDefault: '`local` (`nomad` when `NOMAD_ADDR` is set)',
      check: (v, ctx) =>
        v === 'nomad' && !nomadAddr(ctx.get) && 'SANDBOX_DRIVER=nomad needs NOMAD_ADDR',
      description:
        '`local` (bubblewrap), `nomad`, or `none` (no sandboxes: tools that need one answer with an error)',
    }),
    rootDir: path('SANDBOX_ROOT', {
      defaultFrom: (ctx) => join(ctx.get('DATA_DIR') as string, 'sandboxes'),
      docDefault: '`DATA_DIR/sandboxes`',
      description: 'host directories of running local sandboxes, proxy sockets',
    }),
    sleepAfterMs: int('SANDBOX_SLEEP_AFTER_MS', {
      default: 5 * 60_000,
      min: 100,
      max: 24 * 3600_000,
      description: 'idle time before a sandbox is snapshotted and stopped',
    }),
    webSearch: group(
      {
        url: str('WEB_SEARCH_URL', {
          default: null,
          pattern: /^https?:\/\//,
          problem: 'WEB_SEARCH_URL must be an http(s) URL',
          check: needs('WEB_SEARCH_API_KEY'),
          description:
            'web_search backend (Brave-style or generic JSON); without it web_search answers with a clear error',
        }),
        apiKey: str('WEB_SEARCH_API_KEY', {
          default: null,
          secret: true,
          description: "the web_search backend's key (required with the URL)",
        }),
        flavor: Type.Optional(
          oneOf('WEB_SEARCH_FLAVOR', ['brave', 'generic'], {
            description: "the backend's API: `brave` or `generic`",
          }),
        ),
      },
      { when: ['url', 'apiKey'] },
    ),
    nomad: group(
      {
        address: derived(Type.String(), 'NOMAD_ADDR', (ctx) => nomadAddr(ctx.get)!),
        token: nullable(
          str('NOMAD_TOKEN', { secret: true, description: "the Nomad driver's ACL token" }),
        ),
        namespace: nullable(
          str('NOMAD_NAMESPACE', { description: "the Nomad driver's namespace" }),
        ),
        region: nullable(str('NOMAD_REGION', { description: "the Nomad driver's region" })),
      },
      { when: ['address'] },
    ),
    hostUser: SandboxHostUserSchema,
    unsafeNoLimits: bool('SANDBOX_UNSAFE_NO_LIMITS', {
      description:
        '`true`: sandboxes run without process, memory, CPU or disk limits, and the worker starts on a host that can enforce none (for a trusted local try-out only). `false`: such a host refuses to start, naming what is missing',
    }),
    nomadBaseImages: bool('SANDBOX_NOMAD_BASE_IMAGES', {
      description:
        "`true`: an environment's `base_image` runs on Nomad with the docker task driver (clients need the docker driver with `volumes { enabled = true }`). Those containers have Docker's bridge network, not the session proxy: firewall the clients' docker bridge first. `false`: `base_image` is refused",
    }),
    nomadProxy: group(
      {
        advertise: str('SANDBOX_NOMAD_PROXY_ADVERTISE', {
          default: null,
          description:
            "the address Nomad tasks reach this worker at: each Nomad sandbox then gets its session's outbound proxy over TCP (a password per session in the proxy URL; anyone else gets 407) and the egress CA. Unset: Nomad sandboxes have no network",
        }),
        bind: str('SANDBOX_NOMAD_PROXY_BIND', {
          defaultFrom: (ctx) => ctx.get('SANDBOX_NOMAD_PROXY_ADVERTISE') as string | null,
          docDefault: 'the advertise address',
          description: 'the address that proxy listens on',
        }),
      },
      { when: ['advertise'] },
    ),
    limitCaps: section({
      processes: Type.Optional(
        int('SANDBOX_MAX_PROCESSES', {
          min: 16,
          max: 1_000_000,
          docDefault: "the instance size's",
          description: "cap on every sandbox's processes, below its instance size's",
        }),
      ),
      memoryMb: Type.Optional(
        int('SANDBOX_MAX_MEMORY_MB', {
          min: 32,
          max: 16 * 1024 * 1024,
          docDefault: "the instance size's",
          description: "cap on every sandbox's memory (MiB), below its instance size's",
        }),
      ),
      diskMb: Type.Optional(
        int('SANDBOX_MAX_DISK_MB', {
          min: 16,
          max: 16 * 1024 * 1024,
          docDefault: "the instance size's",
          description: "cap on every sandbox's disk (MiB), below its instance size's",
        }),
      ),
    }),
    packages: section({
      buildTimeoutMs: int('SANDBOX_PACKAGES_BUILD_TIMEOUT_MS', {
        default: 10 * 60_000,
        min: 1000,
        max: 6 * 3600_000,
        description:
          "time limit of one package manager's install when an environment's packages layer is built",
      }),
      maxLayerMb: int('SANDBOX_PACKAGES_MAX_MB', {
        default: 2048,
        min: 1,
        max: 1024 * 1024,
        description: 'largest packages layer; a bigger one is a `session.error` and is not cached',
      }),
    }),
  }),
});
