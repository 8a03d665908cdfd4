#!/usr/bin/env bash
# Single-node Kafka (KRaft combined mode: broker + controller in one JVM) for the integration
# tests, on 127.0.0.1 only.
#
#   bash test/kit/infra/kafka.sh up|down|restart|status
#
# Everything it downloads or writes lives under ${AGENTFLEET_INFRA_DIR:-$HOME/.cache/agentfleet/infra},
# never in the repo:
#   kafka-<version>/libs/   the broker's jars, resolved once from Maven Central by
#                           test/kit/infra/kafka/pom.xml (Maven's own cache is ~/.m2)
#   kafka/                  server.properties, log4j.properties, ports, data/ (log.dirs),
#                           logs/, kafka.pid, kafka.out
#   kafka.env               KAFKA_BROKERS=127.0.0.1:<port>  (source it before the tests)
#
# `up` is idempotent (a running broker is left alone). `restart` stops and starts the broker on
# the same ports and data (what the broker-restart test runs). `down` sends SIGTERM, waits, and
# sends SIGKILL after KAFKA_STOP_TIMEOUT seconds (default 30). Needs java (17+) and mvn.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/../../.." && pwd)"
pom="$here/kafka/pom.xml"
infra="${AGENTFLEET_INFRA_DIR:-$HOME/.cache/agentfleet/infra}"
version="$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$pom" | head -n 1)"
# The jars are shared by every server set (main, faults): one download, under the cache root.
dist="${AGENTFLEET_KAFKA_DIST:-$HOME/.cache/agentfleet/kafka-$version}"
libs="$dist/libs"
state="$infra/kafka"
props="$state/server.properties"
pidfile="$state/kafka.pid"
portsfile="$state/ports"
envfile="$infra/kafka.env"
start_timeout="${KAFKA_START_TIMEOUT:-120}"
stop_timeout="${KAFKA_STOP_TIMEOUT:-30}"

log() { echo "kafka.sh: $*" >&2; }
die() { log "$*"; exit 1; }

ensure_jars() {
  [ -f "$dist/.complete" ] && return 0
  command -v mvn >/dev/null || die "mvn not found (needed once to fetch the Kafka $version jars)"
  command -v java >/dev/null || die "java not found"
  log "resolving Kafka $version jars into $libs (once)"
  local started=$SECONDS tmp="$dist.tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  if ! mvn -q -B -f "$pom" dependency:copy-dependencies -DoutputDirectory="$tmp/libs" >"$tmp/mvn.log" 2>&1; then
    cat "$tmp/mvn.log" >&2
    die "mvn could not resolve the Kafka $version jars"
  fi
  rm -f "$tmp/mvn.log"
  ls "$tmp/libs"/kafka_2.13-"$version".jar >/dev/null || die "kafka_2.13-$version.jar missing after mvn"
  rm -rf "$dist"
  mv "$tmp" "$dist"
  touch "$dist/.complete"
  log "jars ready in $((SECONDS - started))s"
}

running_pid() {
  [ -f "$pidfile" ] || return 1
  local pid
  pid="$(cat "$pidfile")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  # Guard against a recycled pid: it must still be our broker.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "kafka.Kafka $props" || return 1
  echo "$pid"
}

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

port_free() {
  node -e 'const s=require("net").createServer();s.once("error",()=>process.exit(1));s.listen(Number(process.argv[1]),"127.0.0.1",()=>s.close())' "$1"
}

port_open() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Chooses the ports once; later starts reuse them (and the data). If a remembered port has been
# taken by something else in the meantime, new ports are chosen and the data is wiped (it is
# test data, and a KRaft node's identity includes its controller address).
choose_ports() {
  if [ -f "$portsfile" ]; then
    # shellcheck disable=SC1090
    . "$portsfile"
    if port_free "$BROKER_PORT" && port_free "$CONTROLLER_PORT"; then return 0; fi
    log "remembered ports $BROKER_PORT/$CONTROLLER_PORT are taken: choosing new ones and wiping the data"
    rm -rf "$state/data"
  fi
  BROKER_PORT="$(free_port)"
  CONTROLLER_PORT="$(free_port)"
  while [ "$CONTROLLER_PORT" = "$BROKER_PORT" ]; do CONTROLLER_PORT="$(free_port)"; done
  printf 'BROKER_PORT=%s\nCONTROLLER_PORT=%s\n' "$BROKER_PORT" "$CONTROLLER_PORT" >"$portsfile"
}

write_config() {
  mkdir -p "$state/data" "$state/logs"
  cat >"$props" <<EOF
# Written by test/kit/infra/kafka.sh: single-node KRaft (combined mode), tests only.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$BROKER_PORT,CONTROLLER://127.0.0.1:$CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$BROKER_PORT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
log.dirs=$state/data
num.partitions=8
default.replication.factor=1
min.insync.replicas=1
auto.create.topics.enable=false
offsets.topic.replication.factor=1
offsets.topic.num.partitions=8
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
group.initial.rebalance.delay.ms=0
# Tests use short consumer session timeouts so a killed consumer's partitions move in seconds.
group.min.session.timeout.ms=1000
num.network.threads=2
num.io.threads=4
num.recovery.threads.per.data.dir=1
log.retention.hours=24
log.segment.bytes=67108864
EOF
  cat >"$state/log4j.properties" <<EOF
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.RollingFileAppender
log4j.appender.file.File=$state/logs/server.log
log4j.appender.file.MaxFileSize=10MB
log4j.appender.file.MaxBackupIndex=2
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=WARN
log4j.logger.org.apache.kafka.clients=WARN
EOF
}

java_opts() {
  jopts=(-Xms256m -Xmx512m -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -Djava.awt.headless=true
    "-Dlog4j.configuration=file:$state/log4j.properties" "-Dkafka.logs.dir=$state/logs"
    -cp "$libs/*")
}

format_storage() {
  [ -f "$state/data/meta.properties" ] && return 0
  local cluster_id jopts
  java_opts
  cluster_id="$(java "${jopts[@]}" kafka.tools.StorageTool random-uuid 2>/dev/null | tail -n 1)"
  [ -n "$cluster_id" ] || die "StorageTool random-uuid printed nothing"
  log "formatting storage (cluster $cluster_id)"
  java "${jopts[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$props" --ignore-formatted >&2
}

# Ready = the port accepts, the broker logged that it started, and (when the repo's kafkajs is
# installed) a metadata request answers.
wait_ready() {
  local pid=$1 deadline=$((SECONDS + start_timeout))
  while :; do
    kill -0 "$pid" 2>/dev/null || { tail -n 40 "$state/kafka.out" "$state/logs/server.log" >&2 2>/dev/null || true; die "broker exited during start"; }
    if port_open "$BROKER_PORT" && grep -q "Kafka Server started" "$state/logs/server.log" 2>/dev/null; then break; fi
    [ "$SECONDS" -lt "$deadline" ] || die "broker not ready after ${start_timeout}s (see $state/logs/server.log)"
    sleep 0.5
  done
  if [ -d "$repo_root/node_modules/kafkajs" ]; then
    (cd "$repo_root" && node -e '
      const { Kafka, logLevel } = require("kafkajs");
      const admin = new Kafka({ clientId: "kafka-sh", brokers: [process.argv[1]], logLevel: logLevel.NOTHING,
        retry: { retries: 20, initialRetryTime: 250, maxRetryTime: 2000 } }).admin();
      (async () => { await admin.connect(); const c = await admin.describeCluster(); await admin.disconnect();
        if (!c.brokers.length) throw new Error("no brokers in metadata"); })()
        .catch((e) => { console.error("kafka.sh: metadata check failed:", e.message); process.exit(1); });
    ' "127.0.0.1:$BROKER_PORT") || die "broker up but metadata request failed"
  fi
}

start() {
  local pid
  if pid="$(running_pid)"; then
    # shellcheck disable=SC1090
    . "$portsfile"
    log "already running (pid $pid) on 127.0.0.1:$BROKER_PORT"
    echo "KAFKA_BROKERS=127.0.0.1:$BROKER_PORT" >"$envfile"
    return 0
  fi
  ensure_jars
  mkdir -p "$state"
  choose_ports
  write_config
  format_storage
  local started=$SECONDS jopts
  java_opts
  : >"$state/logs/server.log"
  # setsid: the broker outlives this script and is not in the caller's process group.
  setsid java "${jopts[@]}" kafka.Kafka "$props" >>"$state/kafka.out" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$pidfile"
  wait_ready "$pid"
  echo "KAFKA_BROKERS=127.0.0.1:$BROKER_PORT" >"$envfile"
  log "up (pid $pid) on 127.0.0.1:$BROKER_PORT in $((SECONDS - started))s; env in $envfile"
}

stop() {
  local pid
  if ! pid="$(running_pid)"; then
    log "not running"
    rm -f "$pidfile"
    return 0
  fi
  local started=$SECONDS deadline=$((SECONDS + stop_timeout))
  kill -TERM "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "still running after ${stop_timeout}s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.5
      break
    fi
    sleep 0.2
  done
  rm -f "$pidfile"
  log "stopped (pid $pid) in $((SECONDS - started))s"
}

status() {
  local pid
  if pid="$(running_pid)"; then
    # shellcheck disable=SC1090
    . "$portsfile"
    echo "running pid=$pid brokers=127.0.0.1:$BROKER_PORT"
  else
    echo "stopped"
    return 3
  fi
}

case "${1:-}" in
  fetch) ensure_jars ;;
  up) start ;;
  down) stop ;;
  restart) stop; start ;;
  status) status ;;
  *) echo "usage: $0 fetch|up|down|restart|status" >&2; exit 2 ;;
esac
