#!/usr/bin/env bash
# Supply-chain checks with cargo-deny (deny.toml): every dependency's
# license is on the allowlist, it comes from crates.io, and duplicate
# versions are listed. The RustSec advisories need their database, fetched
# from GitHub, which these machines cannot reach: run
# `cargo deny check advisories` where the network allows.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
cargo deny --log-level error check bans licenses sources
echo "advisories: not checked here (the RustSec database is fetched from GitHub); see deny.toml"
