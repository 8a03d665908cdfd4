#!/usr/bin/env bash
# Starts the real servers for fleet mode and the real-adapter tests, on free loopback ports:
# Redis (Debian's redis-server), Apache Kafka (KRaft, jars from Maven Central) and FerretDB v1
# (built from test/kit/ferretdb; FERRETDB_BACKEND=sqlite, the default, on SQLite files;
# postgresql on a private PostgreSQL cluster per set started by test/kit/infra/postgres.sh). Downloads and builds are cached under
# ${AGENTFLEET_INFRA_DIR:-$HOME/.cache/agentfleet/infra}; nothing is written to the repo.
#
# Two sets are started: the main one (REDIS_URL, KAFKA_BROKERS, MONGODB_URL), shared by the
# test files running in parallel, and a fault set (FAULT_*) that only the restart tests and
# the fleet fault test restart, so a restart never disturbs another test file.
# Writes every variable to <infra dir>/fleet.env and prints it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${AGENTFLEET_INFRA_DIR:-$HOME/.cache/agentfleet/infra}"
faults="$dir/faults"
mkdir -p "$dir" "$faults"

# Install, download and build once, before the parallel starts: two sets would otherwise race
# on dpkg's lock (apt-get install redis-server) and on the caches (Kafka jars, FerretDB build).
bash "$here/redis.sh" install > "$dir/redis.install.log" 2>&1 || { tail -n 40 "$dir/redis.install.log"; exit 1; }
bash "$here/kafka.sh" fetch > "$dir/kafka.fetch.log" 2>&1 || { tail -n 40 "$dir/kafka.fetch.log"; exit 1; }
bash "$here/ferretdb.sh" build > "$dir/ferretdb.build.log" 2>&1 || { tail -n 40 "$dir/ferretdb.build.log"; exit 1; }
if [ "${FERRETDB_BACKEND:-sqlite}" = postgresql ]; then
  bash "$here/postgres.sh" install > "$dir/postgres.install.log" 2>&1 || { tail -n 40 "$dir/postgres.install.log"; exit 1; }
fi

pids=(); names=()
for set in main faults; do
  d="$dir"; [ "$set" = faults ] && d="$faults"
  for svc in redis kafka ferretdb; do
    ( AGENTFLEET_INFRA_DIR="$d" bash "$here/$svc.sh" up > "$d/$svc.up.log" 2>&1 ) & pids+=($!); names+=("$set/$svc")
    sleep 1 # free-port picks happen at start: spread them out
  done
done
failed=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then echo "infra: ${names[$i]} failed to start" >&2; failed=1; fi
done
if [ "$failed" -ne 0 ]; then
  for d in "$dir" "$faults"; do for svc in redis kafka ferretdb; do echo "--- $d/$svc"; tail -n 30 "$d/$svc.up.log" 2>/dev/null || true; done; done
  exit 1
fi
val() { sed -n "s/^$2=//p" "$1"; }
{
  cat "$dir/redis.env" "$dir/kafka.env" "$dir/mongo.env"
  echo "FAULT_REDIS_URL=$(val "$faults/redis.env" REDIS_URL)"
  echo "FAULT_KAFKA_BROKERS=$(val "$faults/kafka.env" KAFKA_BROKERS)"
  echo "FAULT_MONGODB_URL=$(val "$faults/mongo.env" MONGODB_URL)"
  echo "REDIS_RESTART_URL=$(val "$faults/redis.env" REDIS_URL)"
  echo "KAFKA_RESTART_BROKERS=$(val "$faults/kafka.env" KAFKA_BROKERS)"
  echo "MONGODB_RESTART_URL=$(val "$faults/mongo.env" MONGODB_URL)"
  echo "REDIS_RESTART_CMD=\"env AGENTFLEET_INFRA_DIR=$faults bash $here/redis.sh restart\""
  echo "KAFKA_RESTART_CMD=\"env AGENTFLEET_INFRA_DIR=$faults bash $here/kafka.sh restart\""
  echo "MONGODB_RESTART_CMD=\"env AGENTFLEET_INFRA_DIR=$faults bash $here/ferretdb.sh restart\""
} > "$dir/fleet.env"
echo "# export these (or: set -a; source $dir/fleet.env; set +a)"
cat "$dir/fleet.env"
