#!/usr/bin/env bash
# Creates or updates the Python venv the Python-driven tests and `npm run load` use
# (test/e2e/api/schemathesis.test.ts, test/e2e/sdk/python-sdk.test.ts, test/e2e/fleet/load-locust.test.ts, load/locust):
# $AGENTFLEET_VENV (default $HOME/.cache/agentfleet/venv), with exactly the pins in
# test/kit/python/requirements.txt. Idempotent: when the venv was built from the same requirements
# file (its sha256 is stamped in the venv), nothing is downloaded. pip's download cache stays
# under $HOME (pip's default, ~/.cache/pip); nothing is written into the repository.
# Prints the venv's python path as its last line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="${AGENTFLEET_VENV:-$HOME/.cache/agentfleet/venv}"
req="$here/requirements.txt"
python="${PYTHON:-python3}"
want="$(sha256sum "$req" | cut -d' ' -f1)"
stamp="$venv/.agentfleet-requirements.sha256"

if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "python venv up to date: $venv" >&2
else
  echo "== creating/updating python venv $venv" >&2
  mkdir -p "$(dirname "$venv")"
  [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
  echo "$want" > "$stamp"
fi
echo "$venv/bin/python"
