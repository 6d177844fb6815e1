#!/usr/bin/env bash
# Tests the Python package as users get it: builds the `pt2lsp` wheel with `pip wheel ./python`
# (what pip does for `pip install ./python`, a git URL or an sdist), installs it into a fresh
# virtualenv (target/package-venv), and runs tests/package/ with that virtualenv's Python: the
# API against the command's JSON on every fixture, the installed command, `python -m pt2lsp`,
# `check --trace` with no --python, and `serve` over stdio.
#
# torch comes from .venv (scripts/test.sh installs it): the fresh virtualenv gets a .pth line
# that appends .venv's site-packages to its path, after its own. Installing torch afresh would
# download and unpack its 5.3 GB of CUDA wheels each run (2m34s and 2m54s measured on this
# machine, pip's cache did not shorten the second); the wheel under test is still installed
# into, and imported from, the fresh virtualenv only.
#
# PT2LSP_WHEEL_PROFILE=dev builds an unoptimised wheel from the dev profile that `cargo test`
# already compiled (the test command uses it: the same code, minutes faster on 2 cores); the
# default, release, is the wheel to ship.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
maturin_version=1.16.0
mypy_version=2.4.1
pre_commit_version=4.7.0

step() { printf '\n==> %s\n' "$*" >&2; }

if ! .venv/bin/python -c 'import torch, pytest' 2>/dev/null; then
  echo "error: .venv with torch and pytest is missing: scripts/test.sh installs it" >&2
  exit 1
fi
if [ "$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("maturin"))' 2>/dev/null)" != "$maturin_version" ]; then
  .venv/bin/pip install --quiet --disable-pip-version-check "maturin==$maturin_version"
fi

profile=${PT2LSP_WHEEL_PROFILE:-release}
case "$profile" in
  release | dev) ;;
  *) echo "error: PT2LSP_WHEEL_PROFILE must be release or dev, not $profile" >&2; exit 2 ;;
esac
step "Build the wheel with pip wheel ./python (profile $profile)"
out=$root/target/wheels
rm -f "$out"/pt2lsp-*.whl
# No build isolation: .venv has the pinned maturin, and an isolated build would fetch one. The
# build itself is the one a user's pip runs (PEP 517, maturin's backend, in-tree); the backend
# runs the `maturin` command, found on PATH.
PATH="$root/.venv/bin:$PATH" MATURIN_PEP517_ARGS="--profile $profile --locked" \
  .venv/bin/python -m pip wheel --quiet --disable-pip-version-check --no-build-isolation --no-deps \
  --wheel-dir "$out" ./python >&2
wheel=$(ls "$out"/pt2lsp-*.whl)
ls -l "$wheel" >&2

step "Install it into a fresh virtualenv beside torch"
venv=$root/target/package-venv
rm -rf "$venv"
# A venv made from a venv's Python is based on the same interpreter, so .venv's compiled
# packages (torch) load in it.
.venv/bin/python -m venv "$venv"
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))' > "$site/pt2lsp-test-torch.pth"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "$wheel"
# mypy checks the package's types (tests/package/test_types.py): its stub against the module.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "mypy==$mypy_version"
# pre-commit installs the hook from the repository (tests/package/test_integrations.py).
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pre-commit==$pre_commit_version"

step "pytest: the installed package"
cd "$root"
env -u VIRTUAL_ENV -u PT2LSP_PYTHON "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/package
