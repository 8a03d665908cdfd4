/**
 * The public package registries a `limited` environment reaches when it sets
 * `allow_package_managers: true` (SDK BetaLimitedNetwork: "Permits outbound access to public
 * package registries (PyPI, npm, etc.) beyond those listed in the allowed_hosts array"): one
 * list per package manager the environment's `packages` know (pip, npm, apt, cargo, gem, go).
 * Entries use the proxy's host patterns (core/src/egress/proxy/policy.ts: exact name, or
 * `*.suffix` for every subdomain). Opening a name never opens a private address: the egress
 * policy still refuses those after DNS (./policy.ts).
 *
 * Tested in core/test/proxy.policy.test.ts ("package registries") and
 * test/e2e/environments/env-networking.test.ts (a real request to pypi.org through a session's proxy).
 */

export const PACKAGE_REGISTRY_HOSTS = {
  pip: ['pypi.org', 'files.pythonhosted.org', 'pypi.python.org'],
  npm: ['registry.npmjs.org', 'registry.yarnpkg.com'],
  apt: [
    'deb.debian.org',
    'security.debian.org',
    'archive.ubuntu.com',
    'security.ubuntu.com',
    'ports.ubuntu.com',
  ],
  cargo: ['crates.io', 'static.crates.io', 'index.crates.io'],
  gem: ['rubygems.org', 'index.rubygems.org'],
  // Not storage.googleapis.com or other shared CDNs: they would open every bucket on them.
  go: ['proxy.golang.org', 'sum.golang.org'],
} as const satisfies Record<string, readonly string[]>;

/** Every registry host, all package managers together. */
export const ALL_PACKAGE_REGISTRY_HOSTS: readonly string[] =
  Object.values(PACKAGE_REGISTRY_HOSTS).flat();
