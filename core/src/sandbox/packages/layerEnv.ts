/**
 * Where an environment's package layer sits inside a sandbox and what makes it usable from
 * bash: the layer is mounted read-only at SANDBOX_PACKAGES_DIR (writable only in the confined
 * build that fills it), its bin directories go first on PATH, and PYTHONPATH, NODE_PATH,
 * GEM_PATH and LD_LIBRARY_PATH point into it.
 *
 * Layout of a layer (each manager's part present only when it has packages):
 *   python/          pip --target (python/bin: console scripts)
 *   node/            npm --global --prefix (node/lib/node_modules, node/bin)
 *   apt/             the .debs, dpkg -x'ed (apt/usr/bin, apt/usr/games, apt/usr/lib/…)
 *   cargo/bin        cargo install --root
 *   gem/             gem install --install-dir (gem/bin)
 *   go/bin           go install (GOBIN)
 *
 * Tested: test/e2e/environments/env-packages.test.ts ("pip and npm packages are importable from bash",
 * "the layer is read-only inside the session").
 */
export const SANDBOX_PACKAGES_DIR = '/opt/agentfleet/packages';

const L = SANDBOX_PACKAGES_DIR;
const MULTIARCH = process.arch === 'arm64' ? 'aarch64-linux-gnu' : 'x86_64-linux-gnu';

export const LAYER_PATHS = {
  python: `${L}/python`,
  node: `${L}/node`,
  apt: `${L}/apt`,
  cargo: `${L}/cargo`,
  gem: `${L}/gem`,
  go: `${L}/go`,
} as const;

const BIN_DIRS = [
  `${L}/python/bin`,
  `${L}/node/bin`,
  `${L}/cargo/bin`,
  `${L}/go/bin`,
  `${L}/gem/bin`,
  `${L}/apt/usr/local/bin`,
  `${L}/apt/usr/bin`,
  `${L}/apt/bin`,
  `${L}/apt/usr/games`,
];
const LIB_DIRS = [`${L}/apt/usr/lib/${MULTIARCH}`, `${L}/apt/lib/${MULTIARCH}`, `${L}/apt/usr/lib`];

const prepend = (first: string, rest: string | undefined) => (rest ? `${first}:${rest}` : first);

/**
 * `env` (a sandbox's environment, sandboxEnv()) with the layer's paths in front: the layer's
 * binaries win over the system's, variables the environment set keep their entries after ours.
 */
export function withPackageLayerEnv(env: Record<string, string>): Record<string, string> {
  return {
    ...env,
    PATH: prepend(BIN_DIRS.join(':'), env.PATH),
    PYTHONPATH: prepend(LAYER_PATHS.python, env.PYTHONPATH),
    NODE_PATH: prepend(`${LAYER_PATHS.node}/lib/node_modules`, env.NODE_PATH),
    GEM_PATH: prepend(LAYER_PATHS.gem, env.GEM_PATH),
    LD_LIBRARY_PATH: prepend(LIB_DIRS.join(':'), env.LD_LIBRARY_PATH),
  };
}

/** bwrap options mounting the layer (read-only unless `writable`, which only the build uses). */
export function packageLayerBindArgs(layer: { hostDir: string; writable?: boolean }): string[] {
  return [layer.writable ? '--bind' : '--ro-bind', layer.hostDir, SANDBOX_PACKAGES_DIR];
}
