#!/usr/bin/env bash
# Sets up what is missing, then runs every test: formatting and lints, Rust
# unit and integration tests (a throwaway PostgreSQL for the tests that need
# one, and the whole API suite a second time on it), the soak on two
# instances, and the browser tests (Playwright + Debian's Chromium against a
# real server). Safe to re-run. Ends with how long each step took.
#
# One compilation serves clippy and the tests: the workspace's own crates
# are compiled by clippy-driver (RUSTC_WORKSPACE_WRAPPER, the way `cargo
# clippy` runs it), which lints them (-D warnings) and also produces the
# code the tests run; dependencies are compiled once, by rustc. So there is
# no separate check-mode build of the whole tree, and the binary the
# browser tests start is the one the integration tests started.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

timings=()
step_name=""
step_start=$SECONDS
run_start=$SECONDS
finish_step() {
  if [ -n "$step_name" ]; then
    timings+=("$(printf '%6ss  %s' $((SECONDS - step_start)) "$step_name")")
  fi
}
step() {
  finish_step
  step_name="$*"
  step_start=$SECONDS
  printf '\n==> %s\n' "$*"
}
report() {
  finish_step
  step_name=""
  printf '\n==> time per step\n'
  printf '%s\n' "${timings[@]}"
  printf '%6ss  total\n' $((SECONDS - run_start))
}
pg_dir=""
cleanup() {
  status=$?
  [ -n "$pg_dir" ] && scripts/pg.sh stop "$pg_dir"
  report
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step "setup (installs skip themselves when present)"
scripts/setup.sh --tests

step "cargo fmt --check"
cargo fmt --all -- --check

step "docs: no numbered rounds of past work; docs/ARCHITECTURE.md's module tree matches the code (scripts/check_docs.py)"
python3 scripts/check_docs.py

step "cargo deny (licenses, duplicate versions, sources)"
scripts/deny.sh

step "hadolint Dockerfile (the container image; hadolint from PyPI, e2e/requirements.txt)"
"$COUNTERSIGN_VENV/bin/hadolint" Dockerfile

step "building the console's browser side (hydrate wasm, debug)"
scripts/site.sh

step "compiling the workspace and its tests, linted by clippy (-D warnings)"
export RUSTC_WORKSPACE_WRAPPER
RUSTC_WORKSPACE_WRAPPER=$(rustup which clippy-driver 2>/dev/null || command -v clippy-driver)
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"
cargo test --all-targets --no-run

step "starting a throwaway PostgreSQL (scripts/pg.sh)"
# In memory when the machine has /dev/shm: the cluster is thrown away anyway,
# and its files cost no disk writes there.
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  pg_dir=$(mktemp -d -p /dev/shm countersign-pg.XXXXXX)
else
  pg_dir=$(mktemp -d -t countersign-pg.XXXXXX)
fi
COUNTERSIGN_TEST_DATABASE_URL=$(scripts/pg.sh start "$pg_dir")
export COUNTERSIGN_TEST_DATABASE_URL
echo "$COUNTERSIGN_TEST_DATABASE_URL"

step "the rails' counterparts checked on their own (the Stripe fake against Stripe's description, the test bank against the ISO 20022 XSDs)"
# The conformance suite (server/tests/rail_conformance/) runs every rail
# connector against these; their own tests first, so a broken counterpart
# is told from a broken connector.
(cd e2e/rails/stripe && "$COUNTERSIGN_VENV/bin/python" test_stripe_fake.py 2>&1 | tail -n 3)
(cd e2e/rails/bank && "$COUNTERSIGN_VENV/bin/python" test_bank_sim.py 2>&1 | tail -n 3)

step "cargo test (unit, property and integration tests)"
# The integration tests partly wait (on timeouts, reconciliation ticks, the
# rail's settlement), partly compute: sixteen at a time keep two cores busy
# (docs/BENCHMARKS.md, "Test suite"). Override with RUST_TEST_THREADS.
# The API tests also write what an outside verifier sees (the transparency
# log and proof bundles, docs/EVIDENCE.md) for the independent Python check
# below.
evidence_dir=$(mktemp -d)
COUNTERSIGN_EVIDENCE_FIXTURES="$evidence_dir" RUST_TEST_THREADS="${RUST_TEST_THREADS:-16}" cargo test --all-targets

step "the transparency log and proof bundles checked by an independent verifier (examples/verify_evidence.py, cryptography)"
# Written from docs/EVIDENCE.md alone: it must accept the log a real server
# served (signatures, roots, inclusion and consistency proofs, the chain)
# and each payment's proof bundle (a passkey approval paid on the rail,
# with and without its accounts disclosed; a rejection; a policy's
# approval; an approval a delegate gave for someone away), and refuse
# each tampered copy it makes of them.
python="$COUNTERSIGN_VENV/bin/python"
"$python" examples/verify_evidence.py log "$evidence_dir/log.json" --tampered
for bundle in bundle bundle-disclosed bundle-rejected bundle-auto bundle-delegated; do
  "$python" examples/verify_evidence.py bundle "$evidence_dir/$bundle.json" --tampered
done
rm -rf "$evidence_dir"

step "the whole API suite again, on PostgreSQL (API_TESTS_DATABASE=postgres)"
# Each test's servers get a database of their own on the throwaway cluster
# (recycled from finished tests: docs/DECISIONS.md, "The core carved out of
# the server"), and the tests read and tamper with it through the same
# handle as on SQLite. Eight at a time: on PostgreSQL the suite is CPU-bound.
# `--workspace`: the features of the build above, so the binary is reused
# (`-p server` alone unifies features differently and compiles it again).
API_TESTS_DATABASE=postgres RUST_TEST_THREADS="${RUST_TEST_THREADS:-8}" cargo test --workspace --test api

step "soak: a minute of mixed traffic with rail faults, two instances on one PostgreSQL database"
# countersign-bench soak (docs/BENCHMARKS.md) on the debug binaries: every
# proposal final, audit verify intact and one rail transfer per
# succeeded operation after agents and approvers spread over both instances.
soak_dir=$(mktemp -d)
"$CARGO_TARGET_DIR/debug/countersign-bench" --bin "$CARGO_TARGET_DIR/debug/countersign" --work-dir "$soak_dir" \
  --site-root target/site soak --minutes 1 --postgres "$COUNTERSIGN_TEST_DATABASE_URL"
rm -rf "$soak_dir"

scripts/pg.sh stop "$pg_dir"
pg_dir=""
unset COUNTERSIGN_TEST_DATABASE_URL

step "compose smoke test: docker-compose.yml's services, a payment through them (e2e/compose_smoke.py)"
# With a container runtime (`docker info`), the image is built and compose
# runs it; without one, each service runs as a local process with the
# environment docker-compose.yml gives it, on a PostgreSQL cluster of its own.
"$COUNTERSIGN_VENV/bin/python" e2e/compose_smoke.py --binary "$CARGO_TARGET_DIR/debug/countersign"

step "benchmark guard, report only: status poll and intake against their baselines (debug build, short)"
# The two hot-path ratios, measured the way `make bench`
# measures them (alternating rounds against the same-run baselines), only
# shorter and on the debug binaries, so a change that eats a hot path shows
# up in every run's log. A report, never a timed assertion: the figures and
# their goals are for the release build (docs/BENCHMARKS.md); nothing here
# fails the run.
guard_dir=$(mktemp -d)
"$CARGO_TARGET_DIR/debug/countersign-bench" --bin "$CARGO_TARGET_DIR/debug/countersign" --work-dir "$guard_dir" \
  --site-root target/site suite --only poll,intake --duration 4 --rounds 2 | sed -n '/== summary/,$p' \
  || echo "(the benchmark guard did not run; it is a report only)"
rm -rf "$guard_dir"

step "browser tests (Playwright driving /usr/bin/chromium)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
data_dir=$(mktemp -d)/data
rm -rf e2e/artifacts && mkdir -p e2e/artifacts
if ! (cd e2e && COUNTERSIGN_BIN="$CARGO_TARGET_DIR/debug/countersign" E2E_PORT="$port" E2E_DATA_DIR="$data_dir" \
  npx playwright test); then
  # CI keeps only this log: print what each failed test saw (its error and
  # the page's accessibility snapshot), so a rare failure can be read there.
  find e2e/artifacts/test-results -name error-context.md -exec sh -c 'echo "==== $1"; head -c 6000 "$1"' _ {} \;
  # Last, which tests failed and why, in a few lines each.
  [ -f e2e/artifacts/results.json ] && node e2e/failures.mjs e2e/artifacts/results.json
  exit 1
fi
node e2e/failures.mjs e2e/artifacts/results.json
echo "screenshots: e2e/artifacts/"

step "passkey ceremonies of the browser tests, verified again by py_webauthn"
"$COUNTERSIGN_VENV/bin/python" e2e/webauthn_check.py e2e/artifacts/webauthn.json
