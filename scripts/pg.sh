#!/usr/bin/env bash
# A throw-away PostgreSQL server for the ledger tests (tests/integration/test_ledger_postgres.py).
#
#   eval "$(bash scripts/pg.sh start)"   # starts it; prints `export DPSYN_TEST_PG_URL=...; export DPSYN_TEST_PG_DIR=...`
#   bash scripts/pg.sh stop [DIR]         # stops it and removes its folder (DIR defaults to $DPSYN_TEST_PG_DIR)
#
# The cluster lives in a fresh temp folder (initdb; nothing of the system's own clusters is touched), listens on a
# unix socket in that folder only (no TCP port: nothing outside this machine can reach it), trusts local
# connections (a test server, no password) and runs fsync off (its data is thrown away). Run as root, the
# server runs as the `postgres` user (PostgreSQL refuses to run as root). Needs Debian's `postgresql` package
# (or any initdb/pg_ctl on PATH, or PG_BIN=/path/to/bin).
set -euo pipefail

find_bin() {
  if [ -n "${PG_BIN:-}" ]; then echo "$PG_BIN"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [ -n "$d" ]; then echo "$d"; return; fi
  if command -v pg_ctl >/dev/null 2>&1; then dirname "$(command -v pg_ctl)"; return; fi
  echo "scripts/pg.sh: no PostgreSQL server found (apt-get install postgresql, or set PG_BIN)" >&2
  exit 1
}

as_owner() {  # run "$@" as the cluster's owner: postgres when we are root, else ourselves
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

start() {
  local bin dir
  bin=$(find_bin)
  dir=$(mktemp -d /tmp/dpsyn-pg.XXXXXX)  # short: a unix socket's path has at most 107 bytes
  chmod 0755 "$dir"
  [ "$(id -u)" -eq 0 ] && chown postgres: "$dir"
  as_owner "$bin/initdb" -D "$dir/data" -U dpsyn -A trust -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
    -o "-c listen_addresses='' -c unix_socket_directories='$dir' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=50" \
    start >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
  as_owner "$bin/createdb" -h "$dir" -U dpsyn dpsyn_test
  # psycopg reads a unix-socket folder from the host query parameter
  echo "export DPSYN_TEST_PG_URL='postgresql+psycopg://dpsyn@/dpsyn_test?host=$dir'; export DPSYN_TEST_PG_DIR='$dir'"
}

stop() {
  local dir="${1:-${DPSYN_TEST_PG_DIR:-}}"
  [ -n "$dir" ] && [ -d "$dir/data" ] || { echo "scripts/pg.sh stop: no cluster folder given" >&2; exit 1; }
  as_owner "$(find_bin)/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}

case "${1:-}" in
  start) start ;;
  stop) shift; stop "$@" ;;
  *) echo "usage: scripts/pg.sh start | stop [DIR]" >&2; exit 2 ;;
esac
