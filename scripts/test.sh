#!/usr/bin/env bash
# Runs every test of pt2lsp, installing what the tests need first: the Rust build, a .venv with
# torch (from PyPI) for the real-exporter tests, and Debian's neovim, emacs-nox and elpa-eglot for
# the editor tests.
# Idempotent: a second run reuses .venv, the cargo cache and the installed packages.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

step() { printf '\n==> %s\n' "$*" >&2; }

step "Python environment (.venv: torch, torchvision, transformers, einops, numpy, pytest)"
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
# transformers is pinned: the real-model tests and the 70B benchmark build its models. einops is
# pinned: the einops fixtures run it under the real exporter.
if ! .venv/bin/python -c 'import torch, torchvision, numpy, pytest, transformers, einops' 2>/dev/null \
  || ! .venv/bin/python -c 'import transformers, sys; sys.exit(transformers.__version__ != "5.23.0")' 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/pip install --quiet --disable-pip-version-check torch torchvision numpy pytest 'transformers==5.23.0' 'einops==0.8.2'
fi
.venv/bin/python -c 'import torch; print("torch", torch.__version__)' >&2
# The deployment targets' packages (tests of `targets`): ONNX's exporter and runtime, and
# ExecuTorch 1.5.1, which declares no torch requirement and lowers and runs with torch 2.15
# (measured): installed without its dependencies, so that pip keeps the torch above, with only
# what its XNNPACK lowering imports.
if ! .venv/bin/python -c 'import onnx, onnxscript, onnxruntime, executorch.exir' 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check 'onnx==1.23.2' 'onnxscript==0.7.2' 'onnxruntime==1.32.0'
  .venv/bin/pip install --quiet --disable-pip-version-check --no-deps 'executorch==1.5.1' 'torchao==0.18.0' \
    flatbuffers ruamel.yaml tabulate pyyaml
fi

step "Debian packages for the editor tests: neovim, emacs-nox, elpa-eglot"
missing=()
command -v nvim >/dev/null 2>&1 || missing+=(neovim)
command -v emacs >/dev/null 2>&1 || missing+=(emacs-nox)
[ -d /usr/share/emacs/site-lisp/elpa-src ] && ls /usr/share/emacs/site-lisp/elpa-src | grep -q '^eglot' || missing+=(elpa-eglot)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "missing Debian packages: ${missing[*]} (apt-get install -y ${missing[*]})" >&2
    [ -n "${CI:-}" ] && exit 1
  fi
fi

step "Tracer worker (tracer/python): ruff lint and format, unit tests on recorded messages"
# ruff is pinned: a newer one may lint differently, and this step fails the run when it fails.
if ! .venv/bin/ruff --version 2>/dev/null | grep -qx 'ruff 0.17.6'; then
  .venv/bin/pip install --quiet --disable-pip-version-check 'ruff==0.17.6'
fi
.venv/bin/ruff check --config tracer/python/ruff.toml tracer/python
.venv/bin/ruff format --check --config tracer/python/ruff.toml tracer/python
PYTHONDONTWRITEBYTECODE=1 .venv/bin/python -m pytest -q -p no:cacheprovider tracer/python/tests

# A clean clone gains nothing from incremental compilation, whose caches were 5 GB of target/.
if [ -n "${CI:-}" ]; then export CARGO_INCREMENTAL=0; fi

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --quiet -- -D warnings

step "cargo test"
export PT2LSP_PYTHON="$root/.venv/bin/python"
cargo test --workspace

if [ -d tests/python ]; then
  step "pytest: fixtures against the real exporter"
  .venv/bin/python -m pytest -q tests/python
fi

step "Python package: build the wheel, install it into a fresh venv, test the API and the command"
# The dev profile reuses what `cargo test` compiled; `pip wheel ./python` builds a release wheel.
PT2LSP_WHEEL_PROFILE=dev scripts/test-package.sh

step "Editors: the VS Code extension's tests and .vsix, the Neovim plugin against the server"
# The binary `cargo test` built for the server's integration tests: `cargo build -p pt2lsp`
# unifies features without the dev-dependencies, and so compiled and linked a second binary.
cargo test --workspace --no-run --quiet
PT2LSP_BIN="$root/target/debug/pt2lsp" tests/editors/run.sh

step "Benchmarks, fast mode: every stage runs on a small subset (asserts nothing about time)"
"$python" bench/run.py --fast --binary "$root/target/debug/pt2lsp" --python "$root/.venv/bin/python"
