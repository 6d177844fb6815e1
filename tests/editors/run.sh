#!/usr/bin/env bash
# Editor tests: (a) the VS Code extension's unit tests (`npm ci && npm test` in editors/vscode)
# and its .vsix manifest; (b) headless Neovim with the editors/nvim plugin against the real
# server: PT101 appears, "Ignore PT101 on this line" is applied, the buffer changes, PT101 goes;
# (c) the same through Emacs's eglot (Debian's emacs-nox and elpa-eglot), headless.
#
#   tests/editors/run.sh                 # builds target/debug/pt2lsp if PT2LSP_BIN is unset
#   PT2LSP_BIN=target/release/pt2lsp tests/editors/run.sh
#
# A missing npm, nvim or emacs fails the run when CI is set, and skips that part (loudly) otherwise.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
passed=0
failed=0
skipped=0

part() { printf '\n--> %s\n' "$*" >&2; }

# Succeeds when the tool is there; otherwise fails under CI and counts a skip outside it.
need() {
  if command -v "$1" >/dev/null 2>&1; then
    return 0
  fi
  if [ -n "${CI:-}" ]; then
    echo "$1 is missing and CI is set: $2" >&2
    exit 1
  fi
  echo "SKIPPED: $1 is missing ($2)" >&2
  skipped=$((skipped + 1))
  return 1
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

part "VS Code extension: npm ci && npm test, then npm run package"
if need npm "install Node.js 20 and npm"; then
  (
    cd "$root/editors/vscode"
    npm ci --no-audit --no-fund --loglevel=error
    npm test
    npm run --silent package -- --out "$work/pt2lsp.vsix" >/dev/null
  )
  # The packaged manifest has every setting and command the extension promises.
  python3 - "$work/pt2lsp.vsix" <<'EOF'
import json, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as vsix:
    manifest = json.loads(vsix.read("extension/package.json"))
    names = vsix.namelist()
settings = set(manifest["contributes"]["configuration"]["properties"])
commands = {c["command"] for c in manifest["contributes"]["commands"]}
want_settings = {"pt2lsp.server.path", "pt2lsp.python", "pt2lsp.trace", "pt2lsp.strict", "pt2lsp.timeout"}
want_commands = {"pt2lsp.exportPt2", "pt2lsp.retrace", "pt2lsp.restartServer", "pt2lsp.showOutput"}
problems = [f"missing setting {s}" for s in sorted(want_settings - settings)]
problems += [f"missing command {c}" for c in sorted(want_commands - commands)]
if "extension/dist/extension.js" not in names:
    problems.append("the bundle dist/extension.js is not in the .vsix")
if manifest["capabilities"]["untrustedWorkspaces"]["supported"] != "limited":
    problems.append("untrusted workspaces are not 'limited'")
if problems:
    sys.exit("vsix manifest: " + "; ".join(problems))
if any(name.startswith("extension/bin/") for name in names):
    sys.exit("the platform-neutral .vsix carries a server binary")
print(f"vsix: {len(settings)} settings, {len(commands)} commands, {len(names)} files")
EOF
  # A per-platform .vsix with the server inside (a stripped copy of the debug build, for size).
  server="${PT2LSP_BIN:-$root/target/debug/pt2lsp}"
  if [ ! -x "$server" ]; then
    cargo build --quiet --manifest-path "$root/Cargo.toml" -p pt2lsp
  fi
  cp "$server" "$work/pt2lsp-server"
  strip --strip-debug "$work/pt2lsp-server" 2>/dev/null || true
  "$root/editors/vscode/package-platform.sh" linux-x64 "$work/pt2lsp-server" "$work/pt2lsp-linux-x64.vsix" >/dev/null
  python3 - "$work/pt2lsp-linux-x64.vsix" "$work/pt2lsp-server" <<'EOF'
import stat, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as vsix:
    info = vsix.getinfo("extension/bin/pt2lsp")
    carried = vsix.read(info)
    manifest = vsix.read("extension.vsixmanifest").decode()
mode = info.external_attr >> 16
problems = []
if carried != open(sys.argv[2], "rb").read():
    problems.append("bin/pt2lsp is not the binary given")
if not mode & stat.S_IXUSR:
    problems.append(f"bin/pt2lsp is not executable (mode {oct(mode)})")
if 'TargetPlatform="linux-x64"' not in manifest:
    problems.append("the manifest names no linux-x64 target")
if problems:
    sys.exit("platform vsix: " + "; ".join(problems))
print(f"platform vsix: linux-x64 with bin/pt2lsp ({len(carried) >> 20} MiB, mode {oct(mode & 0o777)})")
EOF
  [ ! -e "$root/editors/vscode/bin" ] || { echo "package-platform.sh left editors/vscode/bin behind" >&2; exit 1; }
  passed=$((passed + 1))
fi

part "Neovim plugin: diagnostic, code action, commands"
if need nvim "Debian: apt-get install -y neovim"; then
  bin="${PT2LSP_BIN:-}"
  if [ -z "$bin" ]; then
    cargo build --quiet --manifest-path "$root/Cargo.toml" -p pt2lsp
    bin="$root/target/debug/pt2lsp"
  fi
  # A project with a pyproject.toml, the model one directory below it: the plugin must find
  # the project as the root.
  mkdir -p "$work/project/models"
  printf '[project]\nname = "demo"\n' >"$work/project/pyproject.toml"
  cp "$root/fixtures/examples/transformer_block.py" "$work/project/models/"
  file="$work/project/models/transformer_block.py"
  line=$(grep -n 'error\[PT101\]' "$file" | head -n 1 | cut -d: -f1)
  # The trace's progress needs a Python with torch (scripts/test.sh makes .venv).
  trace_python=""
  if "$root/.venv/bin/python" -c 'import torch' 2>/dev/null; then
    trace_python="$root/.venv/bin/python"
  elif [ -n "${CI:-}" ]; then
    echo ".venv with torch is missing and CI is set: scripts/test.sh installs it" >&2
    exit 1
  else
    echo "SKIPPED: the Neovim trace-progress checks (no .venv with torch)" >&2
  fi
  status=0
  XDG_STATE_HOME="$work" XDG_CACHE_HOME="$work" XDG_DATA_HOME="$work" XDG_CONFIG_HOME="$work" \
  PT2LSP_BIN="$bin" PT2LSP_PLUGIN="$root/editors/nvim" PT2LSP_PROJECT="$work/project" \
  PT2LSP_FILE="$file" PT2LSP_LINE=$((line - 1)) PT2LSP_TRACE_PYTHON="$trace_python" \
    timeout 300 nvim --headless --clean -n -c "luafile $root/tests/editors/nvim_plugin.lua" </dev/null || status=$?
  if [ "$status" -ne 0 ]; then
    echo "the Neovim plugin test failed (exit $status)" >&2
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
fi

part "Emacs eglot: diagnostic, quick fix, diagnostic gone"
if need emacs "Debian: apt-get install -y emacs-nox elpa-eglot"; then
  bin="${PT2LSP_BIN:-$root/target/debug/pt2lsp}"
  [ -x "$bin" ] || cargo build --quiet --manifest-path "$root/Cargo.toml" -p pt2lsp
  mkdir -p "$work/eglot/models"
  printf '[project]\nname = "demo"\n\n[tool.pt2lsp]\ntrace = "off"\n' >"$work/eglot/pyproject.toml"
  cp "$root/fixtures/examples/transformer_block.py" "$work/eglot/models/"
  file="$work/eglot/models/transformer_block.py"
  line=$(grep -n 'error\[PT101\]' "$file" | head -n 1 | cut -d: -f1)
  status=0
  HOME="$work" PT2LSP_BIN="$bin" PT2LSP_FILE="$file" PT2LSP_LINE="$line" \
    timeout 120 emacs -q --batch -l "$root/tests/editors/eglot_test.el" </dev/null || status=$?
  if [ "$status" -ne 0 ]; then
    echo "the eglot test failed (exit $status)" >&2
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
fi

echo
if [ "$skipped" -gt 0 ]; then
  echo "editors: $passed passed, $failed failed, $skipped skipped"
else
  echo "editors: $passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
