#!/usr/bin/env bash
# Packages the extension for one platform with the server inside: the .vsix carries the binary
# in bin/, which the extension runs when neither pt2lsp.server.path nor the selected Python
# environment gives a `pt2lsp` (src/binary.ts).
#
#   editors/vscode/package-platform.sh linux-x64 target/release/pt2lsp [OUT.vsix]
#
# TARGET is a VS Code platform (linux-x64, linux-arm64, darwin-arm64, darwin-x64, win32-x64,
# ...); BINARY the pt2lsp built for it (pt2lsp.exe for win32-*). Run `npm ci` here first.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,10p' "$0" >&2
  exit 2
fi
target=$1
binary=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
cd "$(dirname "$0")"
out=${3:-pt2lsp-$target.vsix}
case "$target" in
  win32-*) name=pt2lsp.exe ;;
  linux-* | alpine-* | darwin-*) name=pt2lsp ;;
  *) echo "error: $target is not a VS Code platform (linux-x64, darwin-arm64, win32-x64, ...)" >&2; exit 2 ;;
esac
if [ ! -f "$binary" ]; then
  echo "error: no server binary at $binary" >&2
  exit 2
fi
rm -rf bin
mkdir bin
trap 'rm -rf bin' EXIT
cp "$binary" "bin/$name"
chmod 755 "bin/$name"
npx vsce package --no-dependencies --target "$target" --out "$out" >&2
echo "$out"
