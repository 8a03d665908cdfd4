/**
 * The install command of each package manager, run by bash INSIDE the confined build sandbox
 * (./build.ts) with the layer mounted writable at SANDBOX_PACKAGES_DIR and the registries
 * reachable only through the build's proxy (HTTP(S)_PROXY). Names were validated at
 * environment create/update (./spec.ts) and are shell-quoted here as well; `--` ends the
 * options wherever the tool accepts it.
 *
 *   pip    python3 -m pip install --target <layer>/python
 *   npm    npm install --global --prefix <layer>/node
 *   apt    apt-cache depends --recurse → apt-get download (the ones the host lacks) → dpkg -x
 *          into <layer>/apt: no root, no maintainer scripts
 *   cargo  cargo install --root <layer>/cargo (the host toolchain, bound read-only)
 *   gem    gem install --install-dir <layer>/gem
 *   go     go install with GOBIN=<layer>/go/bin (GOTOOLCHAIN=local: no toolchain download)
 *
 * A missing tool exits 127 with "<tool> is not installed on this host", which the build turns
 * into an error naming the manager and its packages.
 * Tested: test/e2e/environments/env-packages.test.ts (pip, npm, apt for real; gem's missing tool).
 */
import { shellQuote } from '../../util.js';
import { LAYER_PATHS } from './layerEnv.js';
import type { PackageManager } from './spec.js';

const need = (tool: string) =>
  `command -v ${tool} >/dev/null 2>&1 || { echo "${tool} is not installed on this host" >&2; exit 127; }`;

/** Where the build finds host toolchains outside /usr (bound read-only into the build sandbox). */
export interface BuildTools {
  /** A Rust toolchain directory (its bin/ holds cargo and rustc), or null. */
  rustToolchain: string | null;
}

/** The bash script installing `names` with `manager` into the layer. */
export function installScript(manager: PackageManager, names: string[], tools: BuildTools): string {
  const args = names.map(shellQuote).join(' ');
  const pre = 'set -eu; export HOME=/tmp/home; mkdir -p "$HOME"; cd /tmp';
  switch (manager) {
    case 'pip':
      return [
        pre,
        need('python3'),
        `python3 -m pip --version >/dev/null 2>&1 || { echo "pip (python3 -m pip) is not installed on this host" >&2; exit 127; }`,
        `PIP_BREAK_SYSTEM_PACKAGES=1 python3 -m pip install --no-input --disable-pip-version-check --no-cache-dir --progress-bar off --target ${LAYER_PATHS.python} -- ${args}`,
      ].join('\n');
    case 'npm':
      return [
        pre,
        need('npm'),
        `npm install --global --prefix ${LAYER_PATHS.node} --no-audit --no-fund --no-update-notifier --cache /tmp/npm-cache --proxy "$HTTP_PROXY" --https-proxy "$HTTPS_PROXY" -- ${args}`,
      ].join('\n');
    case 'apt': {
      const plain = names.map((n) => shellQuote(n.split('=')[0]));
      const opts = `-o Dir::Cache=/tmp/apt/cache -o Dir::State::Lists=/var/lib/apt/lists -o Debug::NoLocking=1 -o Acquire::http::Proxy="$HTTP_PROXY" -o Acquire::https::Proxy="$HTTPS_PROXY"`;
      return [
        pre,
        need('apt-get'),
        need('dpkg'),
        `ls /var/lib/apt/lists/*Packages* >/dev/null 2>&1 || { echo "the host has no apt package lists (run apt-get update on it)" >&2; exit 127; }`,
        'mkdir -p /tmp/apt/cache/archives/partial /tmp/apt/debs',
        // every dependency, minus what the host (whose /usr the sandbox sees) already has
        `deps=$(apt-cache ${opts} depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances -- ${plain.join(' ')} | grep -v '^ ' | grep -v '^<' | sort -u)`,
        `want=${names.map(shellQuote).join(' ')}`,
        'for d in $deps; do',
        '  case " $want " in *" $d "*|*" $d="*) continue;; esac',
        `  if dpkg-query -W -f='\${Status}' "$d" 2>/dev/null | grep -q 'ok installed'; then continue; fi`,
        '  want="$want $d"',
        'done',
        `cd /tmp/apt/debs && apt-get ${opts} download -- $want`,
        `mkdir -p ${LAYER_PATHS.apt}`,
        `for f in /tmp/apt/debs/*.deb; do dpkg -x "$f" ${LAYER_PATHS.apt}; done`,
      ].join('\n');
    }
    case 'cargo':
      return [
        pre,
        tools.rustToolchain ? `export PATH="${tools.rustToolchain}/bin:$PATH"` : '',
        need('cargo'),
        `CARGO_HOME=/tmp/cargo cargo install --root ${LAYER_PATHS.cargo} -- ${args}`,
      ].join('\n');
    case 'gem':
      return [
        pre,
        need('gem'),
        `gem install --no-document --install-dir ${LAYER_PATHS.gem} --bindir ${LAYER_PATHS.gem}/bin --http-proxy "$HTTP_PROXY" -- ${args}`,
      ].join('\n');
    case 'go':
      return [
        pre,
        `export PATH="$PATH:/usr/local/go/bin"`,
        need('go'),
        `export GOBIN=${LAYER_PATHS.go}/bin GOPATH=/tmp/go GOCACHE=/tmp/gocache GOFLAGS=-modcacherw GOTOOLCHAIN=local GOPROXY=https://proxy.golang.org`,
        `for m in ${args}; do case "$m" in *@*) go install -- "$m";; *) go install -- "$m@latest";; esac; done`,
      ].join('\n');
  }
}
