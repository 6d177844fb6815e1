#!/usr/bin/env bash
# Runs the headless Neovim test by hand: builds pt2lsp, writes a model whose forward branches on
# a tensor's value after lines with emoji and CJK, and runs tests/nvim/diagnostics.lua on it.
# `cargo test -p pt2lsp --test lsp_nvim` runs the same check from the test suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if ! command -v nvim >/dev/null; then
  echo "nvim not found (Debian: apt-get install -y neovim)" >&2
  exit 1
fi
cargo build --quiet --manifest-path "$root/Cargo.toml" -p pt2lsp
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf 'import torch\n\n\nclass M(torch.nn.Module):  # 😀 漢字\n    def forward(self, x):\n        s = "😀漢字"\n        if x.sum() > 0:\n            return x\n        return -x\n' >"$work/model.py"
XDG_STATE_HOME="$work" XDG_CACHE_HOME="$work" XDG_DATA_HOME="$work" \
PT2LSP_BIN="$root/target/debug/pt2lsp" PT2LSP_FILE="$work/model.py" PT2LSP_CODE=PT101 \
PT2LSP_LINE=6 PT2LSP_FIXED_LINE='        if True:' \
  nvim --headless --clean -n -c "luafile $root/tests/nvim/diagnostics.lua"
echo "nvim test passed"
