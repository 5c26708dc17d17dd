# Shared environment for the project's scripts. Source it, don't run it.
# One target directory outside the checkout, shared by every clone on this
# machine, so a fresh clone rebuilds only the workspace crates.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/countersign/target}"
# The tests' Python checkers (e2e/requirements.txt), in a virtualenv of their
# own (scripts/setup.sh --tests makes it).
export COUNTERSIGN_VENV="${COUNTERSIGN_VENV:-$HOME/.cache/countersign/venv}"
export PATH="$HOME/.cargo/bin:$PWD/e2e/node_modules/.bin:$PATH"
# The flags the console is built with (scripts/site.sh, test.sh, run.sh), the same for every cargo command so
# nothing is built twice (and the server knows its wasm file's name, which
# leptos reads at compile time).
export LEPTOS_OUTPUT_NAME=countersign
export RUSTFLAGS="--cfg erase_components"
