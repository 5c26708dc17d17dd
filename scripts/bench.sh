#!/usr/bin/env bash
# Builds the console in release mode (server + hydrate wasm) and the
# benchmark tool, then runs `countersign-bench` from the repository root.
# Arguments go to the tool; without any, the whole suite runs (~5 minutes).
#   scripts/bench.sh                          # every benchmark (make bench)
#   scripts/bench.sh suite --only poll,queue  # some of them
#   scripts/bench.sh soak --minutes 10        # the soak test (make soak: 10 minutes)
#   scripts/bench.sh hydrate [runs]           # the queue's cold load, slow link, CPU x4 (make bench-hydrate)
#   scripts/bench.sh pg                       # intake, poll and scale-out on PostgreSQL, two instances
#                                             # (a durable throwaway cluster, make bench-pg)
# Scratch databases and logs go to data/bench/ (emptied per benchmark).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/setup.sh

printf '\n==> building the console (release) and countersign-bench\n'
scripts/site.sh --release
# In one invocation, so the server crate is built once for both binaries.
cargo build --release -p server -p countersign-bench --bin countersign --bin countersign-bench

[ $# -eq 0 ] && set -- suite
if [ "$1" = hydrate ]; then
  # The queue's cold load in Chromium on a slow phone link (e2e's npm packages).
  shift
  scripts/setup.sh --tests   # Chromium and the e2e npm packages
  printf '\n==> the queue, cold, 10 Mbit/s 40 ms, CPU x4 (e2e/hydrate_bench.mjs)\n'
  (cd e2e && node hydrate_bench.mjs "$CARGO_TARGET_DIR/release/countersign" "$@")
  exit
fi
if [ "$1" = pg ]; then
  shift
  scripts/setup.sh --tests   # Debian's postgresql
  pg_dir=$(mktemp -d -t countersign-bench-pg.XXXXXX)
  trap 'scripts/pg.sh stop "$pg_dir"' EXIT
  url=$(scripts/pg.sh start "$pg_dir" --durable)
  set -- suite --postgres "$url" --only pg-intake,pg-poll,pg-scale "$@"
  printf '\n==> countersign-bench %s\n' "$*"
  "$CARGO_TARGET_DIR/release/countersign-bench" --site-root target/site "$@"
  exit
fi
printf '\n==> countersign-bench %s\n' "$*"
exec "$CARGO_TARGET_DIR/release/countersign-bench" --site-root target/site "$@"
