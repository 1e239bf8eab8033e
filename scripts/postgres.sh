#!/usr/bin/env bash
# A throwaway PostgreSQL server for the distributed-sweep test, from the OS packages.
#   scripts/postgres.sh start   -> installs postgresql if missing, starts it on 127.0.0.1,
#                                  creates databases fgpo_optuna and fgpo_mlflow, prints the
#                                  Optuna URL (postgresql://fgpo@127.0.0.1:PORT/fgpo_optuna)
#   scripts/postgres.sh stop
# PostgreSQL refuses to run as root, so as root the server runs as the `postgres` user.
set -euo pipefail
DIR=${FGPO_PG_DIR:-/tmp/fgpo-pg}
PORT=${FGPO_PG_PORT:-55432}

bindir() {
  local d
  for d in /usr/lib/postgresql/*/bin; do [[ -x $d/pg_ctl ]] && { echo "$d"; return; }; done
  command -v pg_ctl >/dev/null && dirname "$(command -v pg_ctl)"
}

as_owner() {
  if [[ $(id -u) == 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start() {
  local bin
  bin=$(bindir || true)
  if [[ -z $bin ]]; then
    if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
      apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
      bin=$(bindir)
    else
      echo "postgres.sh: PostgreSQL is not installed and cannot be installed here" >&2; exit 1
    fi
  fi
  if [[ $(id -u) == 0 ]] && ! id postgres >/dev/null 2>&1; then
    useradd --system --no-create-home postgres
  fi
  if ! as_owner "$bin/pg_ctl" -D "$DIR" status >/dev/null 2>&1; then
    rm -rf "$DIR"; mkdir -p "$DIR"
    [[ $(id -u) == 0 ]] && chown postgres "$DIR"
    as_owner "$bin/initdb" -D "$DIR" -A trust -U fgpo >/dev/null
    as_owner "$bin/pg_ctl" -D "$DIR" -l "$DIR/server.log" -w \
      -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null
    for db in fgpo_optuna fgpo_mlflow; do
      as_owner "$bin/createdb" -h 127.0.0.1 -p "$PORT" -U fgpo "$db"
    done
  fi
  echo "postgresql://fgpo@127.0.0.1:$PORT/fgpo_optuna"
}

stop() {
  local bin
  bin=$(bindir || true)
  [[ -n $bin ]] && as_owner "$bin/pg_ctl" -D "$DIR" -m fast stop >/dev/null 2>&1 || true
}

case ${1:-} in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
