"""``python -m pt2lsp ...``: runs the installed ``pt2lsp`` command with the same arguments.

The tracer (``check --trace``, ``serve``) then defaults to this interpreter, the one the
package is installed in: the command reads it from ``PT2LSP_DEFAULT_PYTHON``.
"""

from __future__ import annotations

import os
import subprocess
import sys

from pt2lsp import find_pt2lsp_bin


def main() -> int:
    try:
        binary = find_pt2lsp_bin()
    except FileNotFoundError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    env = dict(os.environ, PT2LSP_DEFAULT_PYTHON=sys.executable)
    argv = [binary, *sys.argv[1:]]
    if sys.platform == "win32":
        # Windows has no exec: the child runs and its status becomes ours.
        return subprocess.run(argv, env=env).returncode
    # exec, not a child process: `python -m pt2lsp serve` then is the language server, with
    # the editor's stdio and signals going straight to it.
    os.execve(binary, argv, env)
    return 2  # not reached: execve returns only by raising


if __name__ == "__main__":
    sys.exit(main())
