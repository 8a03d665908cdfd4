#!/usr/bin/env bash
# Stops the servers started by up.sh.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
for svc in redis kafka ferretdb; do bash "$here/$svc.sh" down || true; done
