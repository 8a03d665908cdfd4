#!/usr/bin/env bash
# Private Redis for tests: up | down | restart | status.
#
# Installs Debian's redis-server when it is missing, then runs a private instance (never the
# system service) on 127.0.0.1 and a free port, daemonized with a pidfile, data under
# $AGENTFLEET_INFRA_DIR/$REDIS_NAME (REDIS_NAME defaults to "redis"; another name runs a separate
# instance, e.g. one that a restart test may bounce without disturbing other tests). `up` writes
# REDIS_URL=redis://127.0.0.1:PORT to $AGENTFLEET_INFRA_DIR/$REDIS_NAME.env (again when already
# running). `restart` stops the instance with SHUTDOWN SAVE and starts it on the same port, so
# data (lease fence counters) survives the restart; no periodic snapshots or AOF otherwise.
# `down` stops it (also with SHUTDOWN SAVE) and removes the env file.
set -euo pipefail

INFRA_DIR="${AGENTFLEET_INFRA_DIR:-$HOME/.cache/agentfleet/infra}"
NAME="${REDIS_NAME:-redis}"
case "$NAME" in ''|*[!A-Za-z0-9_.-]*) echo "redis.sh: bad REDIS_NAME '$NAME'" >&2; exit 2 ;; esac
DIR="$INFRA_DIR/$NAME"
ENV_FILE="$INFRA_DIR/$NAME.env"
PIDFILE="$DIR/redis.pid"
PORTFILE="$DIR/port"
CONF="$DIR/redis.conf"
LOG="$DIR/redis.log"

log() { echo "redis.sh: $*" >&2; }
die() { log "$*"; exit 1; }

install_redis() {
  command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 && return 0
  log "installing redis-server (apt)"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "redis-server is missing and we are not root (no sudo)"
    sudo="sudo"
  fi
  # Keep the package's own service from starting (containers without systemd would start it
  # through invoke-rc.d on port 6379); only when no policy is in place already.
  local policy=/usr/sbin/policy-rc.d added_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod +x "$policy"
    added_policy=1
  fi
  local status=0
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq || status=$?
  if [ "$status" -eq 0 ]; then
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server >/dev/null || status=$?
  fi
  [ -n "$added_policy" ] && $sudo rm -f "$policy"
  [ "$status" -eq 0 ] || die "apt-get failed (exit $status)"
  command -v redis-server >/dev/null 2>&1 || die "redis-server still missing after install"
}

free_port() {
  node -e "const s=require('net').createServer();s.listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})"
}

pid_alive() {
  [ -f "$PIDFILE" ] || return 1
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

port() { cat "$PORTFILE" 2>/dev/null || true; }

pings() {
  local p
  p=$(port)
  [ -n "$p" ] && [ "$(redis-cli -h 127.0.0.1 -p "$p" ping 2>/dev/null)" = "PONG" ]
}

write_env() {
  mkdir -p "$INFRA_DIR"
  echo "REDIS_URL=redis://127.0.0.1:$(port)" >"$ENV_FILE.tmp"
  mv "$ENV_FILE.tmp" "$ENV_FILE"
}

start() {
  mkdir -p "$DIR"
  local p
  p=$(port)
  if [ -z "$p" ]; then
    p=$(free_port)
    echo "$p" >"$PORTFILE"
  fi
  cat >"$CONF" <<EOF
bind 127.0.0.1
port $p
protected-mode yes
daemonize yes
pidfile $PIDFILE
logfile $LOG
dir $DIR
dbfilename dump.rdb
save ""
appendonly no
EOF
  rm -f "$PIDFILE"
  redis-server "$CONF" || die "redis-server failed to start; see $LOG"
  local i
  for i in $(seq 1 100); do
    if pings; then write_env; log "up on 127.0.0.1:$p (pid $(cat "$PIDFILE" 2>/dev/null))"; return 0; fi
    sleep 0.1
  done
  tail -n 20 "$LOG" >&2 || true
  die "redis did not answer PING on port $p within 10s"
}

stop() {
  local p pid
  p=$(port)
  pid_alive || { rm -f "$PIDFILE"; return 0; }
  pid=$(cat "$PIDFILE")
  # SHUTDOWN SAVE writes dump.rdb even with `save ""`, so restart keeps the data.
  redis-cli -h 127.0.0.1 -p "$p" shutdown save >/dev/null 2>&1 || kill "$pid" 2>/dev/null || true
  local i
  for i in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$PIDFILE"; log "stopped (port $p)"; return 0; }
    sleep 0.1
  done
  log "redis pid $pid did not stop within 10s; killing it"
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$PIDFILE"
}

case "${1:-}" in
  install)
    install_redis
    ;;
  up)
    install_redis
    if pid_alive && pings; then write_env; log "already up on 127.0.0.1:$(port)"; exit 0; fi
    # A stale pidfile or a port someone else took meanwhile: start over on a fresh port.
    if pid_alive; then stop; fi
    p=$(port)
    if [ -n "$p" ] && ! node -e "const s=require('net').createServer();s.once('error',()=>process.exit(1));s.listen($p,'127.0.0.1',()=>s.close())"; then
      rm -f "$PORTFILE"
    fi
    start
    ;;
  down)
    stop
    rm -f "$ENV_FILE"
    ;;
  restart)
    install_redis
    [ -n "$(port)" ] || die "no port recorded in $PORTFILE; run 'up' first"
    stop
    start
    ;;
  status)
    if pid_alive && pings; then echo "up REDIS_URL=redis://127.0.0.1:$(port) pid=$(cat "$PIDFILE")"; exit 0; fi
    echo "down"; exit 1
    ;;
  *)
    echo "usage: $0 install|up|down|restart|status" >&2; exit 2
    ;;
esac
