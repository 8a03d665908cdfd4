/**
 * An environment's `packages` as a build input: the package managers (pip, npm, apt, cargo, gem,
 * go), the rules a tenant's package name must follow, and the content hash that names a layer.
 *
 * Guarantees:
 * - A package name is tenant input that ends up as a command argument: each one must match its
 *   manager's pattern (a name with an optional version; no leading `-`, so no option such as
 *   `--index-url`; no whitespace, no `..`, no URL or path other than a Go module path), at most
 *   MAX_PACKAGE_NAME characters, at most MAX_PACKAGES_PER_MANAGER per manager. A bad one is a
 *   400 naming the field (`packages.pip[0]`), at environment create and update.
 * - The layer hash depends only on the lists' content (order and duplicates ignored per
 *   manager), so two environments with the same lists share one layer.
 *
 * Tested: test/e2e/environments/env-packages.test.ts ("invalid package names are refused with 400 naming the
 * field", "two sessions share one layer built once").
 */
import { createHash } from 'node:crypto';
import { invalid } from '../../errors.js';

export const PACKAGE_MANAGERS = ['pip', 'npm', 'apt', 'cargo', 'gem', 'go'] as const;
export type PackageManager = (typeof PACKAGE_MANAGERS)[number];
export type PackageLists = Partial<Record<PackageManager, string[]>>;

export const MAX_PACKAGE_NAME = 214;
export const MAX_PACKAGES_PER_MANAGER = 64;

const VERSION = '[A-Za-z0-9.*+!~^_-]+';
const PIP_SPEC = `(==|>=|<=|~=|!=|<|>|===)${VERSION}`;
/** Name (and version) patterns per manager; none admits whitespace, `:` URLs or a leading `-`. */
const PATTERNS: Record<PackageManager, RegExp> = {
  pip: new RegExp(
    `^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\\[[A-Za-z0-9._-]+(,[A-Za-z0-9._-]+)*\\])?(${PIP_SPEC}(,${PIP_SPEC})*)?$`,
  ),
  npm: /^(@[a-z0-9][a-z0-9._-]*\/)?[a-z0-9][a-z0-9._-]*(@[A-Za-z0-9.*+^~<>=_-]+)?$/,
  apt: /^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~-]+(:[A-Za-z0-9.+~-]+)?)?$/,
  cargo: /^[A-Za-z0-9][A-Za-z0-9_-]*(@[A-Za-z0-9.*+^~<>=_-]+)?$/,
  gem: /^[A-Za-z0-9][A-Za-z0-9._-]*(:[0-9][A-Za-z0-9.]*)?$/,
  go: /^[a-z0-9][a-z0-9.-]*\.[a-z]{2,}(\/[A-Za-z0-9._~-]+)+(@[A-Za-z0-9._+-]+)?$/,
};

const EXAMPLES: Record<PackageManager, string> = {
  pip: "'requests' or 'requests==2.31.0'",
  npm: "'left-pad', '@scope/name' or 'name@1.2.3'",
  apt: "'curl' or 'curl=7.88.1-10'",
  cargo: "'ripgrep' or 'ripgrep@14.1.0'",
  gem: "'rake' or 'rake:13.0.6'",
  go: "'golang.org/x/tools/cmd/stringer@latest'",
};

/** Throws a 400 naming `<field>.<manager>[i]` unless every list is acceptable. */
export function validatePackageLists(lists: unknown, field: string): void {
  if (lists == null) return;
  if (typeof lists !== 'object' || Array.isArray(lists))
    throw invalid(field, 'must be an object of package lists');
  for (const [manager, names] of Object.entries(lists as Record<string, unknown>)) {
    if (manager === 'type') continue; // the SDK's `{type: 'packages', …}`
    const f = `${field}.${manager}`;
    if (!(PACKAGE_MANAGERS as readonly string[]).includes(manager))
      throw invalid(f, `unknown package manager (one of ${PACKAGE_MANAGERS.join(', ')})`);
    if (names == null) continue;
    if (!Array.isArray(names)) throw invalid(f, 'must be an array of package names');
    if (names.length > MAX_PACKAGES_PER_MANAGER)
      throw invalid(f, `at most ${MAX_PACKAGES_PER_MANAGER} packages per manager`);
    names.forEach((name, i) => {
      const fi = `${f}[${i}]`;
      if (typeof name !== 'string') throw invalid(fi, 'must be a string');
      if (name.length === 0 || name.length > MAX_PACKAGE_NAME)
        throw invalid(fi, `must be 1 to ${MAX_PACKAGE_NAME} characters`);
      const m = manager as PackageManager;
      if (name.includes('..') || !PATTERNS[m].test(name))
        throw invalid(
          fi,
          `'${name.slice(0, 80)}' is not a ${m} package name (expected e.g. ${EXAMPLES[m]}; no options, URLs or paths)`,
        );
    });
  }
}

/** The lists that are non-empty, each sorted and without duplicates (managers in fixed order). */
export function normalizePackageLists(lists: PackageLists | null | undefined): PackageLists {
  const out: PackageLists = {};
  for (const m of PACKAGE_MANAGERS) {
    const names = [...new Set(lists?.[m] ?? [])].sort();
    if (names.length) out[m] = names;
  }
  return out;
}

/** Layer format version: bump when the layer's layout or the build commands change. */
const LAYER_FORMAT = 'agentfleet-packages-v1';

/** The content hash naming the layer of these lists (hex, 32 characters). */
export function packagesHash(lists: PackageLists): string {
  const normal = normalizePackageLists(lists);
  return createHash('sha256')
    .update(JSON.stringify([LAYER_FORMAT, normal]))
    .digest('hex')
    .slice(0, 32);
}

export const hasPackages = (lists: PackageLists | null | undefined) =>
  Object.keys(normalizePackageLists(lists)).length > 0;
