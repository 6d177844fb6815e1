#!/usr/bin/env bash
# transformers 5.23.0's MoE models replace their experts' `forward` with the class decorator
# `use_experts_implementation` and export cleanly with torch 2.15: `pt2lsp check` on their
# modeling files, with the whole `transformers` tree as the project, must report no error.
# Usage: bench/moe_replaced_forward.sh [path/to/pt2lsp]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
pt2lsp="${1:-$here/../target/release/pt2lsp}"
work="${TMPDIR:-/tmp}/pt2lsp-moe"
if [ ! -d "$work/transformers" ]; then
    mkdir -p "$work"
    pip download --no-deps --quiet transformers==5.23.0 -d "$work"
    unzip -qo "$work"/transformers-5.23.0-*.whl -d "$work"
fi
files=()
for model in mixtral qwen2_moe qwen3_moe olmoe granitemoe jamba; do
    files+=("$work/transformers/models/$model/modeling_$model.py")
done
# Exit 1 means errors were found; print them and fail.
if ! "$pt2lsp" check --isolated --exit-zero "${files[@]}" --format json >"$work/report.json"; then
    echo "pt2lsp check failed to run" >&2
    exit 2
fi
errors=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); e=[d for d in r if d["severity"]=="error"]; [print(d["file"], d["line"], d["code"], d["message"][:100]) for d in e]; print(len(e))' "$work/report.json")
echo "$errors"
[ "$(echo "$errors" | tail -1)" = "0" ]
