#!/usr/bin/env bash
# Sets up what is missing, then runs every test: formatting and lints, Rust
# unit and integration tests (real server processes; a throwaway PostgreSQL
# for the tests that need one, and the whole API suite a second time on it),
# and the browser tests (Playwright + Debian's Chromium against a real
# server). Safe to re-run.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/setup.sh --tests

step() { printf '\n==> %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo deny (licenses, duplicate versions, sources)"
scripts/deny.sh

step "building the console (server + hydrate wasm, debug)"
cargo leptos build

step "cargo clippy -D warnings"
cargo clippy --all-targets -- -D warnings

step "starting a throwaway PostgreSQL (scripts/pg.sh)"
# Stopped and removed on every way out: success, a failed step, Ctrl-C.
pg_dir=$(mktemp -d -t countersign-pg.XXXXXX)
trap 'scripts/pg.sh stop "$pg_dir"' EXIT
trap 'exit 130' INT TERM
COUNTERSIGN_TEST_DATABASE_URL=$(scripts/pg.sh start "$pg_dir")
export COUNTERSIGN_TEST_DATABASE_URL
echo "$COUNTERSIGN_TEST_DATABASE_URL"

step "cargo test (unit, property and black-box integration tests)"
# The black-box tests mostly wait (on timeouts, reconciliation ticks, real
# server processes), not compute: eight at a time halve the wall time on two
# cores (docs/BENCHMARKS.md, "Test suite"). Override with RUST_TEST_THREADS.
RUST_TEST_THREADS="${RUST_TEST_THREADS:-8}" cargo test

step "the whole API suite again, on PostgreSQL (API_TESTS_DATABASE=postgres)"
# Each test's servers get a fresh database on the throwaway cluster, and the
# tests read and tamper with it through the same handle as on SQLite
# (docs/DECISIONS.md, "The store on two backends").
API_TESTS_DATABASE=postgres RUST_TEST_THREADS="${RUST_TEST_THREADS:-8}" cargo test -p server --test api

step "soak: a minute of mixed traffic with rail faults, two instances on one PostgreSQL database"
# countersign-bench soak (docs/BENCHMARKS.md) on the debug binaries: every
# proposal final, audit verify intact and one rail transfer per
# succeeded operation after agents and approvers spread over both instances.
cargo build -p countersign-bench
soak_dir=$(mktemp -d)
"$CARGO_TARGET_DIR/debug/countersign-bench" --bin "$CARGO_TARGET_DIR/debug/countersign" --work-dir "$soak_dir" \
  --site-root target/site soak --minutes 1 --postgres "$COUNTERSIGN_TEST_DATABASE_URL"
rm -rf "$soak_dir"

scripts/pg.sh stop "$pg_dir"
trap - EXIT INT TERM
unset COUNTERSIGN_TEST_DATABASE_URL

step "browser tests (Playwright driving /usr/bin/chromium)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
data_dir=$(mktemp -d)/data
rm -rf e2e/artifacts && mkdir -p e2e/artifacts
(cd e2e && COUNTERSIGN_BIN="$CARGO_TARGET_DIR/debug/countersign" E2E_PORT="$port" E2E_DATA_DIR="$data_dir" \
  npx playwright test)
echo "screenshots: e2e/artifacts/"
