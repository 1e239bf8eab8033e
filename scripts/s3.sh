#!/usr/bin/env bash
# A throwaway S3-compatible server (moto's server mode, from the `dev` extra) for the team-setup
# tests: the DVC remote and the MLflow artifact store.
#   scripts/s3.sh start   -> starts it on 127.0.0.1 in the background, prints its endpoint URL
#                            (http://127.0.0.1:PORT); the tests create their own buckets
#   scripts/s3.sh stop
# Credentials: moto accepts any; the tests set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY=testing.
set -euo pipefail
DIR=${FGPO_S3_DIR:-/tmp/fgpo-s3}
PORT=${FGPO_S3_PORT:-55433}
BIN=${FGPO_S3_BIN:-$(cd "$(dirname "$0")/.." && pwd)/.venv/bin}
URL="http://127.0.0.1:$PORT"

up() { "$BIN/python" - "$URL" <<'PY' >/dev/null 2>&1
import sys, urllib.request
urllib.request.urlopen(sys.argv[1] + "/moto-api/", timeout=2)
PY
}

start() {
  [[ -x $BIN/moto_server ]] || { echo "s3.sh: $BIN/moto_server missing (make install)" >&2; exit 1; }
  mkdir -p "$DIR"
  if ! up; then
    nohup "$BIN/moto_server" -H 127.0.0.1 -p "$PORT" > "$DIR/server.log" 2>&1 &
    echo $! > "$DIR/pid"
    for _ in $(seq 60); do up && break; sleep 0.5; done
    up || { echo "s3.sh: the server did not answer (see $DIR/server.log)" >&2; exit 1; }
  fi
  echo "$URL"
}

stop() {
  [[ -f $DIR/pid ]] && kill "$(cat "$DIR/pid")" 2>/dev/null || true
  rm -f "$DIR/pid"
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
