#!/usr/bin/env bash
# A real Spark Connect server for tests and benchmarks, from PyPI's pyspark wheel alone.
#
#   scripts/spark-server.sh install [VERSION]  create the cached venv (pyspark==VERSION) and check Java
#   scripts/spark-server.sh start   [VERSION]  start the server on 127.0.0.1, a free port; prints its URL
#   scripts/spark-server.sh stop    [VERSION]  stop it (by PID) and remove its warehouse
#   scripts/spark-server.sh url     [VERSION]  print the URL of the running server
#   scripts/spark-server.sh python  [VERSION]  print the venv's python (it has the reference client)
#
# VERSION defaults to 4.1.4. Venvs live in $THUND_SPARK_CACHE (default ~/.cache/thund-spark),
# outside the repo; state of a running server in $THUND_SPARK_CACHE/run-VERSION/.
set -euo pipefail

cmd="${1:-}"
version="${2:-4.1.4}"
cache="${THUND_SPARK_CACHE:-$HOME/.cache/thund-spark}"
venv="$cache/$version"
state="$cache/run-$version"

die() { echo "spark-server: $*" >&2; exit 1; }

java_ok() {
  command -v java >/dev/null 2>&1 || return 1
  local v
  v=$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
  [ -n "$v" ] && [ "$v" -ge 17 ]
}

install() {
  if ! java_ok; then
    echo "spark-server: installing Java 17 (openjdk-17-jre-headless)" >&2
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq openjdk-17-jre-headless >&2
    java_ok || die "Java 17+ is needed and could not be installed"
  fi
  if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import pyspark, sys; sys.exit(pyspark.__version__ != '$version')" 2>/dev/null; then
    echo "spark-server: installing pyspark==$version into $venv (about 450 MB, once)" >&2
    mkdir -p "$cache"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check "pyspark==$version" 'pandas<3' pyarrow \
      grpcio grpcio-status googleapis-common-protos pyyaml protobuf zstandard >&2
  fi
}

spark_home() {
  "$venv/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))'
}

running() {
  [ -f "$state/pid" ] && kill -0 "$(cat "$state/pid")" 2>/dev/null
}

start() {
  if running; then
    echo "sc://127.0.0.1:$(cat "$state/port")"
    return
  fi
  install
  rm -rf "$state"
  mkdir -p "$state/warehouse"
  local port home
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  home=$(spark_home)
  echo "$port" > "$state/port"
  # setsid: the server outlives this script and is stopped by PID.
  SPARK_HOME="$home" PYSPARK_PYTHON="$venv/bin/python" setsid "$home/bin/spark-submit" \
    --class org.apache.spark.sql.connect.service.SparkConnectServer \
    --master "local[2]" \
    --driver-memory "${THUND_SPARK_DRIVER_MEMORY:-3g}" \
    --conf spark.connect.grpc.binding.address=127.0.0.1 \
    --conf "spark.connect.grpc.binding.port=$port" \
    --conf "spark.sql.warehouse.dir=$state/warehouse" \
    --conf spark.ui.enabled=false \
    --conf spark.sql.shuffle.partitions=4 \
    --conf "spark.driver.extraJavaOptions=-Dderby.system.home=$state" \
    > "$state/server.log" 2>&1 < /dev/null &
  echo $! > "$state/pid"
  for _ in $(seq 1 240); do
    if grep -q "Spark Connect server started" "$state/server.log" 2>/dev/null; then
      echo "sc://127.0.0.1:$port"
      return
    fi
    running || { tail -30 "$state/server.log" >&2; die "the server exited while starting (log above)"; }
    sleep 0.5
  done
  tail -30 "$state/server.log" >&2
  die "the server did not start within 120 s"
}

stop() {
  if running; then
    local pid
    pid=$(cat "$state/pid")
    kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
    kill -9 -- "-$pid" 2>/dev/null || kill -9 "$pid" 2>/dev/null || true
  fi
  rm -rf "$state"
}

case "$cmd" in
  install) install ;;
  start) start ;;
  stop) stop ;;
  url) running || die "no server $version is running"; echo "sc://127.0.0.1:$(cat "$state/port")" ;;
  python) install; echo "$venv/bin/python" ;;
  *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
