#!/usr/bin/env bash
# Private PostgreSQL cluster (Debian's postgresql-15 binaries) behind FerretDB's postgresql
# backend: install | up | down | restart | status.
#
# Never the Debian-managed cluster: its own initdb'd cluster on 127.0.0.1 and a free port, TCP
# only (no Unix socket), trust authentication (loopback, test data only). Durability as a
# standalone MongoDB's default write concern (w:1, j:false: the journal is flushed every 100 ms):
# synchronous_commit=off with wal_writer_delay=100ms, so a commit does not wait for its WAL fsync
# and a crash of PostgreSQL itself (not of FerretDB, which the restart tests bounce) may lose the
# last ~300 ms of acknowledged writes. POSTGRES_SYNCHRONOUS_COMMIT=on waits for the fsync (load/README.md
# measured turns about 3x slower with it on this machine).
# Everything lives in one cluster dir:
#   data/            the cluster (PGDATA)
#   port, postgres.log
# The cluster dir is <infra dir>/postgres, where <infra dir> is
# ${AGENTFLEET_INFRA_DIR:-$HOME/.cache/agentfleet/infra}. PostgreSQL refuses to run as root, so as
# root the server runs as the `postgres` user (created by the Debian package); when that user
# cannot reach the infra dir (root's $HOME is mode 700) the cluster dir is
# /var/tmp/agentfleet-postgres-<hash of the infra dir>, owned by `postgres`, and
# <infra dir>/postgres is a symlink to it.
# `up` is idempotent, creates the database `ferretdb`, loads test/kit/infra/postgres-gin.sql into it
# (GIN indexes that let FerretDB's pushed-down filters use an index) and writes
# <infra dir>/postgres.env:
#   POSTGRESQL_URL=postgres://postgres@127.0.0.1:<port>/ferretdb
# `down` stops the server (fast shutdown) and keeps the data.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
INFRA_DIR="${AGENTFLEET_INFRA_DIR:-$HOME/.cache/agentfleet/infra}"
LINK="$INFRA_DIR/postgres"
ENV_FILE="$INFRA_DIR/postgres.env"
start_timeout="${POSTGRES_START_TIMEOUT:-60}"

log() { echo "postgres.sh: $*" >&2; }
die() { log "$*"; exit 1; }

pg_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do [ -x "$d/initdb" ] && { echo "$d"; return 0; }; done
  return 1
}

install_postgres() {
  pg_bin >/dev/null && return 0
  log "installing postgresql-15 (apt)"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "postgresql-15 is missing and we are not root (no sudo)"
    sudo="sudo"
  fi
  # Keep the package's own cluster from starting (invoke-rc.d); only when no policy is in place.
  local policy=/usr/sbin/policy-rc.d added_policy="" status=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod +x "$policy"
    added_policy=1
  fi
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq || status=$?
  if [ "$status" -eq 0 ]; then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql-15 >/dev/null || status=$?
  fi
  [ -n "$added_policy" ] && $sudo rm -f "$policy"
  [ "$status" -eq 0 ] || die "apt-get failed (exit $status)"
  pg_bin >/dev/null || die "initdb still missing after install"
}

# as_owner CMD...: runs CMD as the cluster's owner (postgres when we are root).
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

# Sets CL (the cluster dir), creating it (and the symlink) when missing.
cluster_dir() {
  mkdir -p "$INFRA_DIR"
  if [ "$(id -u)" -ne 0 ]; then CL="$LINK"; mkdir -p "$CL"; return 0; fi
  getent passwd postgres >/dev/null || die "running as root needs the 'postgres' user (Debian's postgresql package creates it)"
  if runuser -u postgres -- test -x "$INFRA_DIR"; then
    CL="$LINK"
  else
    CL="/var/tmp/agentfleet-postgres-$(printf '%s' "$(cd "$INFRA_DIR" && pwd -P)" | sha256sum | cut -c1-16)"
    if [ ! -L "$LINK" ] || [ "$(readlink "$LINK")" != "$CL" ]; then rm -rf "$LINK"; ln -s "$CL" "$LINK"; fi
  fi
  mkdir -p "$CL"
  chown postgres: "$CL"
  chmod 700 "$CL"
}

free_port() {
  node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

port_free() {
  node -e "const s=require('net').createServer();s.once('error',()=>process.exit(1));s.listen(Number(process.argv[1]),'127.0.0.1',()=>s.close())" "$1"
}

port() { cat "$CL/port" 2>/dev/null || true; }

ready() {
  local p
  p="$(port)"
  [ -n "$p" ] && "$BIN/pg_isready" -q -h 127.0.0.1 -p "$p" -t 2
}

write_env() {
  echo "POSTGRESQL_URL=postgres://postgres@127.0.0.1:$(port)/ferretdb" >"$ENV_FILE.tmp"
  mv -f "$ENV_FILE.tmp" "$ENV_FILE"
}

start() {
  if [ ! -f "$CL/data/PG_VERSION" ]; then
    rm -rf "$CL/data"
    as_owner "$BIN/initdb" -D "$CL/data" -U postgres --auth=trust -E UTF8 --locale=C >"$CL/initdb.log" 2>&1 \
      || { cat "$CL/initdb.log" >&2; die "initdb failed"; }
    cat >>"$CL/data/postgresql.conf" <<'EOF'
# Written by test/kit/infra/postgres.sh (tests only).
listen_addresses = '127.0.0.1'
unix_socket_directories = ''
max_connections = 300
shared_buffers = 128MB
EOF
  fi
  local p
  p="$(port)"
  if [ -z "$p" ] || ! port_free "$p"; then
    p="$(free_port)"
    as_owner sh -c "echo $p >'$CL/port'"
  fi
  as_owner "$BIN/pg_ctl" -D "$CL/data" -l "$CL/postgres.log" -w -t "$start_timeout" \
    -o "-p $p -c synchronous_commit=${POSTGRES_SYNCHRONOUS_COMMIT:-off} -c wal_writer_delay=100ms" start >/dev/null \
    || { tail -n 20 "$CL/postgres.log" >&2; die "PostgreSQL did not start on port $p"; }
  "$BIN/psql" -h 127.0.0.1 -p "$p" -U postgres -d postgres -tAc "SELECT 1 FROM pg_database WHERE datname='ferretdb'" | grep -q 1 \
    || "$BIN/psql" -q -h 127.0.0.1 -p "$p" -U postgres -d postgres -c 'CREATE DATABASE ferretdb' >/dev/null
  PGOPTIONS='-c client_min_messages=warning' "$BIN/psql" -q -h 127.0.0.1 -p "$p" -U postgres -d ferretdb \
    -v ON_ERROR_STOP=1 -f "$here/postgres-gin.sql" >/dev/null || die "could not load $here/postgres-gin.sql"
  write_env
  log "up on 127.0.0.1:$p (cluster $CL)"
}

stop() {
  [ -f "$CL/data/postmaster.pid" ] || return 0
  as_owner "$BIN/pg_ctl" -D "$CL/data" -m fast -w -t 60 stop >/dev/null 2>&1 || true
  log "stopped (port $(port))"
}

cmd="${1:-}"
case "$cmd" in
  install) install_postgres; exit 0 ;;
  up | down | restart | status) ;;
  *) echo "usage: $0 install|up|down|restart|status" >&2; exit 2 ;;
esac
if ! BIN="$(pg_bin)"; then
  case "$cmd" in
    down) exit 0 ;;
    status) echo "down"; exit 1 ;;
  esac
  die "PostgreSQL binaries not found (run: $0 install)"
fi
cluster_dir
case "$cmd" in
  up)
    if ready; then write_env; log "already up on 127.0.0.1:$(port)"; exit 0; fi
    stop
    start
    ;;
  down) stop; rm -f "$ENV_FILE" ;;
  restart) stop; start ;;
  status)
    if ready; then echo "up POSTGRESQL_URL=postgres://postgres@127.0.0.1:$(port)/ferretdb"; exit 0; fi
    echo "down"; exit 1
    ;;
esac
