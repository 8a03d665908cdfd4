#!/usr/bin/env bash
# Stops the servers started by up.sh (both sets), PostgreSQL after the FerretDB it serves.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${AGENTFLEET_INFRA_DIR:-$HOME/.cache/agentfleet/infra}"
for d in "$dir" "$dir/faults"; do
  for svc in redis kafka ferretdb postgres; do AGENTFLEET_INFRA_DIR="$d" bash "$here/$svc.sh" down || true; done
done
