#!/usr/bin/env bash
# Sets up what is missing, builds the console (release) and runs it with its
# embedded defaults: SQLite under ./data, demo data loaded on first start.
# Extra arguments go to `countersign serve` (e.g. --listen 127.0.0.1:9000).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
scripts/setup.sh

printf '\n==> building the console (release): the browser side, then the server\n'
scripts/site.sh --release
cargo build --release -p server --bin countersign

printf '\n==> starting countersign on http://localhost:8080 (Ctrl-C stops it)\n'
exec "$CARGO_TARGET_DIR/release/countersign" serve --demo "$@"
