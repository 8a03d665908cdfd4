#!/usr/bin/env bash
# Starts the real servers for fleet mode and the real-adapter tests, on free loopback ports:
# Redis (Debian's redis-server), Apache Kafka (KRaft, jars from Maven Central) and FerretDB v1
# (SQLite backend, built from test/ferretdb). Downloads and builds are cached under
# ${AGENTFLEET_INFRA_DIR:-$HOME/.cache/agentfleet/infra}; nothing is written to the repo.
# Prints, and writes to <infra dir>/fleet.env, the variables to export:
#   REDIS_URL, KAFKA_BROKERS, MONGODB_URL, plus the restart commands the fault tests use.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${AGENTFLEET_INFRA_DIR:-$HOME/.cache/agentfleet/infra}"
mkdir -p "$dir"
pids=()
for svc in redis kafka ferretdb; do
  ( bash "$here/$svc.sh" up > "$dir/$svc.up.log" 2>&1 ) & pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then failed=1; fi
done
if [ "$failed" -ne 0 ]; then
  for svc in redis kafka ferretdb; do echo "--- $svc"; tail -n 30 "$dir/$svc.up.log" || true; done
  echo "infra:up failed" >&2
  exit 1
fi
{
  cat "$dir/redis.env" "$dir/kafka.env" "$dir/mongo.env"
  echo "REDIS_RESTART_CMD=bash $here/redis.sh restart"
  echo "KAFKA_RESTART_CMD=bash $here/kafka.sh restart"
  echo "MONGODB_RESTART_CMD=bash $here/ferretdb.sh restart"
} > "$dir/fleet.env"
echo "# export these (or: set -a; source $dir/fleet.env; set +a)"
cat "$dir/fleet.env"
