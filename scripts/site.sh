#!/usr/bin/env bash
# Builds the console's browser side into target/site/pkg, without
# cargo-leptos: the `app` crate's hydrate build for wasm32, wasm-bindgen
# (the CLI pinned in setup.sh), and the stylesheet. The server is built by
# plain cargo (it finds these files under `site_root`, docs/CONFIG.md).
#   scripts/site.sh            # debug wasm (tests, development)
#   scripts/site.sh --release  # the wasm-release profile, then wasm-opt -Oz
# Output: countersign.js, countersign.wasm, countersign.css (the names the
# server links; docs/ARCHITECTURE.md, "Console request walk-through").
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

profile=dev
case "${1:-}" in --release) profile=wasm-release ;; "") ;; *) echo "usage: $0 [--release]" >&2; exit 2 ;; esac

pkg=target/site/pkg
mkdir -p "$pkg"
cargo build --package=app --lib --target=wasm32-unknown-unknown --no-default-features --features=hydrate \
  --profile "$profile"

dir=$([ "$profile" = dev ] && echo debug || echo "$profile")
wasm="$CARGO_TARGET_DIR/wasm32-unknown-unknown/$dir/app.wasm"
wasm-bindgen --target=web --out-name=countersign --out-dir="$pkg" --no-typescript "$wasm"
mv -f "$pkg/countersign_bg.wasm" "$pkg/countersign.wasm"
if [ "$profile" != dev ]; then
  # npm's binaryen (e2e/package.json), never Debian's: its old wasm-opt
  # breaks hydration (docs/DECISIONS.md).
  wasm-opt -Oz --enable-bulk-memory --enable-nontrapping-float-to-int "$pkg/countersign.wasm" -o "$pkg/countersign.wasm"
fi
cp style/main.css "$pkg/countersign.css"
# Compressed once here, not on every request: the server sends these files
# as they are to a browser that accepts them (brotli, else gzip), with their
# length. Brotli at its best for release (seconds, once), at 9 for the debug
# wasm (five times larger). node's zlib: no other tool to install.
quality=$([ "$profile" = dev ] && echo 9 || echo 11)
node -e '
const fs = require("fs"), path = require("path"), zlib = require("zlib");
const [dir, quality] = [process.argv[1], Number(process.argv[2])];
for (const name of ["countersign.wasm", "countersign.js", "countersign.css"]) {
  const file = path.join(dir, name), data = fs.readFileSync(file);
  const params = { [zlib.constants.BROTLI_PARAM_QUALITY]: quality, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.length };
  fs.writeFileSync(file + ".br", zlib.brotliCompressSync(data, { params }));
  fs.writeFileSync(file + ".gz", zlib.gzipSync(data, { level: 9 }));
}' "$pkg" "$quality"
echo "site: $pkg ($(du -k "$pkg/countersign.wasm" | cut -f1) KiB wasm, $profile)"
