#!/usr/bin/env bash
# Builds the `pt2lsp` wheel into target/wheels/: the release `pt2lsp` binary (from server/) is
# placed in the wheel's scripts directory, and maturin builds the extension module beside it.
# maturin builds a single crate, so the binary is compiled first, by cargo, into the same
# target directory (the dependencies they share are compiled once).
#
# Usage: python/build-wheel.sh [MATURIN]   (default: maturin on PATH, else .venv/bin/maturin)
# Prints the wheel's path on stdout. PT2LSP_WHEEL_PROFILE=dev builds an unoptimised wheel from
# the dev profile that `cargo test` already compiled (the test command uses it: the same code,
# minutes faster on 2 cores); the default, release, is the wheel to ship.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
maturin=${1:-$(command -v maturin || echo "$root/.venv/bin/maturin")}
target_dir=$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json, sys; print(json.load(sys.stdin)["target_directory"])')

# Both packages in one build: cargo resolves features over the packages it builds, so building
# the binary alone would compile the shared dependencies with other features than maturin's
# build of the extension, and the release build would run twice. The environment variable is
# the one maturin sets (the extension does not link libpython).
profile=${PT2LSP_WHEEL_PROFILE:-release}
case "$profile" in
  release) profile_dir=release ;;
  dev) profile_dir=debug ;;
  *) echo "error: PT2LSP_WHEEL_PROFILE must be release or dev, not $profile" >&2; exit 2 ;;
esac
PYO3_BUILD_EXTENSION_MODULE=1 cargo build --profile "$profile" --locked -p pt2lsp -p pt2lsp_python >&2
rm -rf python/wheel-data
mkdir -p python/wheel-data/scripts
cp "$target_dir/$profile_dir/pt2lsp" python/wheel-data/scripts/pt2lsp
# The release profile keeps line tables for backtraces: 53 MB, against 12 MB without; the
# symbols (function names in a backtrace) stay.
if command -v strip >/dev/null 2>&1; then
  strip --strip-debug python/wheel-data/scripts/pt2lsp
fi

out="$target_dir/wheels"
rm -f "$out"/pt2lsp-*.whl
"$maturin" build --profile "$profile" --locked --manifest-path python/Cargo.toml --out "$out" >&2
ls "$out"/pt2lsp-*.whl
