#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests, from Debian's packages (`postgresql`,
# installed by `scripts/setup.sh --tests`).
#
#   scripts/pg.sh start DIR   a new cluster in DIR (created if missing; nothing
#                             else may be in it): loopback only, a free port,
#                             trust authentication, its unix socket in DIR,
#                             small and not durable (fsync off: test data only).
#                             Creates the database `countersign` and prints its
#                             URL on stdout (also written to DIR/url).
#   scripts/pg.sh start DIR --durable
#                             the same, but durable as a real server is (fsync
#                             and synchronous commit on, 128 MB of shared
#                             buffers): for the benchmarks (scripts/bench.sh pg).
#   scripts/pg.sh stop DIR    stops that cluster and removes DIR.
#
# The server binaries refuse to run as root: as root they run as the
# `postgres` user (`runuser`), and DIR is handed to that user, so DIR must be
# somewhere that user can reach (`mktemp -d` under /tmp is).
set -euo pipefail

usage() { echo "usage: $0 start DIR [--durable] | stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || { [ $# -eq 3 ] && [ "$3" = --durable ]; } || usage
cmd=$1
dir=$2
durable=${3:-}
say() { printf 'pg.sh: %s\n' "$*" >&2; }

bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  say "PostgreSQL is not installed (/usr/lib/postgresql/*/bin/initdb): run scripts/setup.sh --tests"
  exit 1
fi

# Runs a server binary as a user it accepts.
as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

start() {
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -n "$(ls -A "$dir")" ]; then
    say "$dir is not empty"
    exit 1
  fi
  if [ "$(id -u)" = 0 ]; then
    if ! id postgres >/dev/null 2>&1; then
      say "running as root needs the postgres user (from Debian's postgresql-common)"
      exit 1
    fi
    chown postgres: "$dir"
    chmod 0700 "$dir"
    if ! runuser -u postgres -- test -w "$dir"; then
      say "the postgres user cannot write $dir (a parent directory is private?): use a directory under /tmp"
      exit 1
    fi
  fi

  as_owner "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 || {
    cat "$dir/initdb.log" >&2
    say "initdb failed"
    exit 1
  }
  cat >>"$dir/data/postgresql.conf" <<EOF

# scripts/pg.sh: a throwaway cluster
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 200
logging_collector = off
EOF
  if [ "$durable" = --durable ]; then
    # Benchmarks: commits wait for the disk, as in production.
    printf 'shared_buffers = 128MB\n' >>"$dir/data/postgresql.conf"
  else
    # Tests only: nothing here must survive a crash, so nothing waits for the disk.
    printf 'shared_buffers = 16MB\nfsync = off\nsynchronous_commit = off\nfull_page_writes = off\n' \
      >>"$dir/data/postgresql.conf"
  fi

  # The port is free when chosen; another process may take it before the
  # server binds it, so try a few.
  local port started=0
  for _ in 1 2 3; do
    port=$(free_port)
    if as_owner "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -o "-p $port" -w -t 30 start >/dev/null; then
      started=1
      break
    fi
  done
  if [ "$started" != 1 ]; then
    tail -n 20 "$dir/server.log" >&2 || true
    say "the server did not start"
    exit 1
  fi
  echo "$port" >"$dir/port"

  "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres countersign
  local url="postgres://postgres@127.0.0.1:$port/countersign"
  printf '%s\n' "$url" >"$dir/url"
  echo "$url"
}

stop() {
  [ -d "$dir" ] || return 0
  if [ -f "$dir/data/postmaster.pid" ]; then
    # Immediate: a throwaway cluster needs no clean shutdown.
    as_owner "$bin/pg_ctl" -D "$dir/data" -m immediate -w -t 30 stop >/dev/null 2>&1 ||
      say "pg_ctl stop failed (already stopped?)"
  fi
  rm -rf "$dir"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) usage ;;
esac
