#!/usr/bin/env bash
# FerretDB v1 for the MongoDB store tests: up | down | restart | status | build.
#
# Backend: FERRETDB_BACKEND=sqlite (default; SQLite files in ferretdb/data/) or postgresql (a
# private PostgreSQL cluster run by test/kit/infra/postgres.sh, which `up` starts first; faster, but
# PostgreSQL's jsonb cannot hold a NUL character (\u0000) that MongoDB stores, so CI stays on
# SQLite). load/README.md says what was measured. The backend chosen at `up` is
# recorded in ferretdb/backend, and `restart` keeps it.
# FERRETDB_SERIALIZE=0 turns the wrapper's write serializer off (measurement only: without it
# concurrent single-document updates lose writes on both backends; see load/README.md).
#
# The server is the Go wrapper in test/kit/ferretdb (FerretDB's embeddable package plus a proxy that
# makes single-document writes atomic; see test/kit/ferretdb/main.go). It is built once per source
# version with the Go toolchain (Go's module and build caches live under $HOME):
#   <infra dir>/bin/ferretdb-<hash of go.mod, go.sum, main.go>
# and runs on 127.0.0.1 and a free port, with everything under
# ${AGENTFLEET_INFRA_DIR:-$HOME/.cache/agentfleet/infra}:
#   ferretdb/data/          SQLite databases (one file per MongoDB database; sqlite backend)
#   ferretdb/port, ferretdb/backend, ferretdb/ferretdb.pid, ferretdb/ferretdb.log
#   mongo.env               MONGODB_URL=mongodb://127.0.0.1:<port>/agentfleet
#
# `up` is idempotent (a running server is left alone) and waits until the server answers a
# `ping` through the mongodb driver in node_modules. `restart` stops the server (SIGTERM: clean
# shutdown) and starts it again on the same port and data; it is what the restart test runs.
# `down` stops it (SIGKILL after FERRETDB_STOP_TIMEOUT seconds, default 20) and keeps the data.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "$here/../../.." && pwd)"
src="$repo_root/test/kit/ferretdb"
INFRA_DIR="${AGENTFLEET_INFRA_DIR:-$HOME/.cache/agentfleet/infra}"
DIR="$INFRA_DIR/ferretdb"
DATA="$DIR/data"
PIDFILE="$DIR/ferretdb.pid"
PORTFILE="$DIR/port"
LOG="$DIR/ferretdb.log"
ENV_FILE="$INFRA_DIR/mongo.env"
BACKEND_FILE="$DIR/backend"
start_timeout="${FERRETDB_START_TIMEOUT:-30}"
stop_timeout="${FERRETDB_STOP_TIMEOUT:-20}"

log() { echo "ferretdb.sh: $*" >&2; }
die() { log "$*"; exit 1; }

binary_path() {
  local hash
  hash="$(cat "$src/go.mod" "$src/go.sum" "$src/main.go" | sha256sum | cut -c1-16)"
  echo "$INFRA_DIR/bin/ferretdb-$hash"
}

ensure_binary() {
  BIN="$(binary_path)"
  [ -x "$BIN" ] && return 0
  command -v go >/dev/null 2>&1 || die "go not found (needed once to build $BIN from $src)"
  mkdir -p "$INFRA_DIR/bin"
  log "building $BIN (once per source version; Go caches under \$HOME)"
  local started=$SECONDS tmp="$BIN.tmp.$$"
  (cd "$src" && GOFLAGS=-mod=readonly go build -trimpath -o "$tmp" .) || { rm -f "$tmp"; die "go build failed"; }
  mv -f "$tmp" "$BIN"
  log "built in $((SECONDS - started))s"
}

port() { cat "$PORTFILE" 2>/dev/null || true; }

free_port() {
  node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

port_free() {
  node -e "const s=require('net').createServer();s.once('error',()=>process.exit(1));s.listen(Number(process.argv[1]),'127.0.0.1',()=>s.close())" "$1"
}

running_pid() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid="$(cat "$PIDFILE" 2>/dev/null)" || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  # Guard against a recycled pid: it must still be our server.
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -- "-data $DATA" || return 1
  echo "$pid"
}

# wait_ping PID PORT TIMEOUT: pings until the server answers, the process dies, or TIMEOUT
# seconds pass. Exit status: 0 answered, 1 timeout, 2 process gone.
wait_ping() {
  local pid="$1" p="$2" timeout="$3"
  (cd "$repo_root" && node -e '
    const { MongoClient } = require("mongodb");
    const [pid, port, timeout] = process.argv.slice(1).map(Number);
    const deadline = Date.now() + timeout * 1000;
    const alive = () => { try { process.kill(pid, 0); return true; } catch { return false; } };
    (async () => {
      for (;;) {
        if (!alive()) process.exit(2);
        const c = new MongoClient(`mongodb://127.0.0.1:${port}/`, { serverSelectionTimeoutMS: 300, connectTimeoutMS: 300 });
        try {
          await c.db("admin").command({ ping: 1 });
          await c.close();
          process.exit(0);
        } catch {
          await c.close().catch(() => {});
        }
        if (Date.now() > deadline) process.exit(1);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
  ' "$pid" "$p" "$timeout")
}

pings() {
  local p
  p="$(port)"
  [ -n "$p" ] || return 1
  wait_ping "$$" "$p" 0 >/dev/null 2>&1
}

write_env() {
  mkdir -p "$INFRA_DIR"
  echo "MONGODB_URL=mongodb://127.0.0.1:$(port)/agentfleet" >"$ENV_FILE.tmp"
  mv -f "$ENV_FILE.tmp" "$ENV_FILE"
}

# backend_args: the wrapper's backend flags; starts PostgreSQL first for the postgresql backend.
backend_args() {
  BACKEND_ARGS=(-backend "$BACKEND" -serialize="$([ "${FERRETDB_SERIALIZE:-1}" = 0 ] && echo false || echo true)")
  [ "$BACKEND" = postgresql ] || return 0
  # Inserts need no serializing on PostgreSQL (test/kit/ferretdb/main.go); FERRETDB_SERIALIZE_INSERTS=1 keeps it.
  [ "${FERRETDB_SERIALIZE_INSERTS:-0}" = 1 ] || BACKEND_ARGS+=(-serialize-inserts=false)
  AGENTFLEET_INFRA_DIR="$INFRA_DIR" bash "$here/postgres.sh" up >>"$LOG" 2>&1 || die "PostgreSQL did not start; see $LOG"
  local url
  url="$(sed -n 's/^POSTGRESQL_URL=//p' "$INFRA_DIR/postgres.env")"
  [ -n "$url" ] || die "no POSTGRESQL_URL in $INFRA_DIR/postgres.env"
  BACKEND_ARGS+=(-postgresql-url "$url")
}

# start [keep-port]: starts on the recorded port (restart) or on a fresh free port.
start() {
  local keep="${1:-}" attempt p pid status
  ensure_binary
  mkdir -p "$DATA"
  echo "$BACKEND" >"$BACKEND_FILE"
  backend_args
  for attempt in 1 2 3; do
    p="$(port)"
    if [ -z "$p" ] || { [ -z "$keep" ] && ! port_free "$p"; }; then
      p="$(free_port)"
      echo "$p" >"$PORTFILE"
    fi
    echo "--- $(date -u +%FT%TZ) starting on 127.0.0.1:$p" >>"$LOG"
    setsid "$BIN" -listen "127.0.0.1:$p" -data "$DATA" -log-level "${FERRETDB_LOG_LEVEL:-warn}" "${BACKEND_ARGS[@]}" \
      </dev/null >>"$LOG" 2>&1 &
    pid=$!
    echo "$pid" >"$PIDFILE"
    status=0
    wait_ping "$pid" "$p" "$start_timeout" || status=$?
    if [ "$status" -eq 0 ]; then
      write_env
      log "up on 127.0.0.1:$p (pid $pid, backend $BACKEND, data $DATA)"
      return 0
    fi
    if [ "$status" -eq 1 ]; then
      kill -9 "$pid" 2>/dev/null || true
      tail -n 20 "$LOG" >&2 || true
      die "FerretDB did not answer ping on port $p within ${start_timeout}s; see $LOG"
    fi
    # The process exited: most likely the port was taken meanwhile. Retry on a new port,
    # except on restart, where the port must stay (clients are connected to it).
    tail -n 5 "$LOG" >&2 || true
    rm -f "$PIDFILE"
    [ -z "$keep" ] || die "FerretDB exited while starting on port $p; see $LOG"
    rm -f "$PORTFILE"
  done
  die "FerretDB failed to start (3 attempts); see $LOG"
}

stop() {
  local pid i
  pid="$(running_pid)" || { rm -f "$PIDFILE"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 $((stop_timeout * 10))); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$PIDFILE"; log "stopped (pid $pid, port $(port))"; return 0; }
    sleep 0.1
  done
  log "pid $pid did not stop within ${stop_timeout}s; killing it"
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$PIDFILE"
}

case "${FERRETDB_BACKEND:-sqlite}" in
  postgresql | sqlite) BACKEND="${FERRETDB_BACKEND:-sqlite}" ;;
  *) die "FERRETDB_BACKEND must be postgresql or sqlite (got '$FERRETDB_BACKEND')" ;;
esac

case "${1:-}" in
  up)
    if running_pid >/dev/null && pings && [ "$(cat "$BACKEND_FILE" 2>/dev/null)" = "$BACKEND" ]; then
      write_env; log "already up on 127.0.0.1:$(port) (backend $BACKEND)"; exit 0
    fi
    stop
    start
    ;;
  down)
    stop
    rm -f "$ENV_FILE"
    ;;
  restart)
    [ -n "$(port)" ] || die "no port recorded in $PORTFILE; run 'up' first"
    [ -z "${FERRETDB_BACKEND:-}" ] && [ -f "$BACKEND_FILE" ] && BACKEND="$(cat "$BACKEND_FILE")"
    stop
    start keep-port
    ;;
  status)
    if pid="$(running_pid)" && pings; then echo "up MONGODB_URL=mongodb://127.0.0.1:$(port)/agentfleet pid=$pid"; exit 0; fi
    echo "down"; exit 1
    ;;
  build)
    ensure_binary
    echo "$BIN"
    ;;
  *)
    echo "usage: $0 up|down|restart|status|build" >&2; exit 2
    ;;
esac
