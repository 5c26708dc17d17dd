#!/usr/bin/env bash
# Installs what building and testing Countersign needs, skipping whatever is
# already there. Safe to re-run. `--tests` also installs what only the
# tests need: Debian's Chromium (browser tests) and PostgreSQL (a throwaway
# cluster per run, scripts/pg.sh); `--browser` is its older name.
# Everything comes from package registries: no prebuilt binary is downloaded
# from elsewhere.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

want_tests=0
case "${1:-}" in --tests | --browser) want_tests=1 ;; esac

step() { printf '\n==> %s\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

if [ "$want_tests" = 1 ] && ! command -v chromium >/dev/null; then
  step "installing Debian's chromium (browser tests)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq chromium >/dev/null
fi

if [ "$want_tests" = 1 ] && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
  step "installing Debian's postgresql (the tests' throwaway cluster, scripts/pg.sh)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq postgresql >/dev/null
fi

if ! command -v python3 >/dev/null; then
  step "installing python3 (test scripts and the example agent, examples/agent.py)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq python3 >/dev/null
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  step "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

if ! wasm-bindgen --version 2>/dev/null | grep -q '0\.2\.130'; then
  step "building wasm-bindgen-cli 0.2.130 from crates.io (about 2 minutes, once)"
  # Not --locked: its lockfile names a crate version the index no longer has.
  cargo install wasm-bindgen-cli --version 0.2.130
fi

if ! cargo deny --version 2>/dev/null | grep -q '0\.20\.2'; then
  step "building cargo-deny 0.20.2 from crates.io (about 3 minutes, once)"
  cargo install cargo-deny --version 0.20.2 --locked
fi

# Python checkers the tests run (e2e/requirements.txt), in a virtualenv of
# their own; reinstalled only when the requirements change.
venv="$COUNTERSIGN_VENV"
if [ "$want_tests" = 1 ] && ! cmp -s e2e/requirements.txt "$venv/requirements.txt" 2>/dev/null; then
  step "installing the tests' Python checkers (e2e/requirements.txt)"
  if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' 2>/dev/null; then
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq python3-venv >/dev/null
  fi
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r e2e/requirements.txt
  cp e2e/requirements.txt "$venv/requirements.txt"
fi

if [ ! -f e2e/node_modules/.package-lock.json ] || [ e2e/package-lock.json -nt e2e/node_modules/.package-lock.json ]; then
  step "installing npm packages for the browser tests and wasm-opt"
  (cd e2e && npm ci --no-audit --no-fund)
fi

# The TypeScript client's build and test tools (typescript, openapi-typescript):
# its suite runs against a real server in server/tests/api/clients.rs.
if [ ! -f clients/typescript/node_modules/.package-lock.json ] || [ clients/typescript/package-lock.json -nt clients/typescript/node_modules/.package-lock.json ]; then
  step "installing npm packages for the TypeScript client (clients/typescript)"
  (cd clients/typescript && npm ci --no-audit --no-fund)
fi
