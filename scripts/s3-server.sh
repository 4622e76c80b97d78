#!/usr/bin/env bash
# A local S3-compatible server for the tests of s3:// storage roots: moto's server, from PyPI.
#
#   scripts/s3-server.sh start   start it on 127.0.0.1, a free port, with bucket `thund-test`;
#                                prints its endpoint (http://127.0.0.1:PORT)
#   scripts/s3-server.sh stop    stop it (by PID)
#   scripts/s3-server.sh url     print the endpoint of the running server
#
# The venv lives in $THUND_S3_CACHE (default ~/.cache/thund-s3), outside the repo.
set -euo pipefail

cmd="${1:-}"
cache="${THUND_S3_CACHE:-$HOME/.cache/thund-s3}"
venv="$cache/venv"
state="$cache/run"

die() { echo "s3-server: $*" >&2; exit 1; }

install() {
  if [ ! -x "$venv/bin/moto_server" ]; then
    echo "s3-server: installing moto[server] into $venv (once)" >&2
    mkdir -p "$cache"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check 'moto[server]>=5.1,<6' >&2
  fi
}

running() {
  [ -f "$state/pid" ] && kill -0 "$(cat "$state/pid")" 2>/dev/null
}

start() {
  if running; then
    echo "http://127.0.0.1:$(cat "$state/port")"
    return
  fi
  install
  rm -rf "$state"
  mkdir -p "$state"
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  echo "$port" > "$state/port"
  setsid "$venv/bin/moto_server" -H 127.0.0.1 -p "$port" > "$state/server.log" 2>&1 < /dev/null &
  echo $! > "$state/pid"
  for _ in $(seq 1 100); do
    if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; then
      # Path-style bucket creation; the server checks no signature.
      python3 -c "import urllib.request as u; u.urlopen(u.Request('http://127.0.0.1:$port/thund-test', method='PUT'))" \
        || die "could not create the test bucket"
      echo "http://127.0.0.1:$port"
      return
    fi
    running || die "the server exited; see $state/server.log"
    sleep 0.1
  done
  die "the server did not listen within 10 s; see $state/server.log"
}

stop() {
  if running; then
    kill "$(cat "$state/pid")" 2>/dev/null || true
  fi
  rm -rf "$state"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  url) running && echo "http://127.0.0.1:$(cat "$state/port")" || die "not running" ;;
  *) die "usage: scripts/s3-server.sh start|stop|url" ;;
esac
