#!/usr/bin/env bash
# The check step of the GitHub Action (action.yml): one pt2lsp run for the annotations in the
# log (`--format github`), one for the SARIF report, with the same paths and arguments. The
# exit status is the first run's: 1 when errors were found, 2 when pt2lsp could not run.
#
# Usage: PT2LSP_PATHS=... PT2LSP_ARGS=... PT2LSP_TRACE=true|false PT2LSP_SARIF=out.sarif \
#        scripts/github-action.sh PYTHON
# Writes `sarif=<path>` to $GITHUB_OUTPUT when it is set.
set -uo pipefail
python=${1:-python3}
read -r -a paths <<< "${PT2LSP_PATHS:-.}"
read -r -a args <<< "${PT2LSP_ARGS:-}"
case "${PT2LSP_TRACE:-false}" in
  true) args+=(--trace --python "$(command -v "$python")") ;;
  false) ;;
  *) echo "error: the trace input must be true or false, not ${PT2LSP_TRACE}" >&2; exit 2 ;;
esac
pt2lsp=("$python" -m pt2lsp check)

"${pt2lsp[@]}" --format github "${args[@]}" "${paths[@]}"
status=$?
if [ -n "${PT2LSP_SARIF:-}" ] && [ "$status" -ne 2 ]; then
  # The report's exit status repeats the first run's; only a failure to write it matters.
  "${pt2lsp[@]}" --format sarif --exit-zero "${args[@]}" "${paths[@]}" > "$PT2LSP_SARIF" ||
    echo "warning: the SARIF report could not be written" >&2
  if [ -n "${GITHUB_OUTPUT:-}" ]; then
    echo "sarif=$PT2LSP_SARIF" >> "$GITHUB_OUTPUT"
  fi
fi
exit "$status"
