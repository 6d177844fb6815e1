"""The ``pt2lsp`` command: the console script pip installs and ``python -m pt2lsp`` both run it.

The command (``check``, ``rule``, ``export``, ``serve``) runs in this process, from the
extension module: the wheel is one extension and builds with plain ``pip`` or ``maturin``.
The tracer (``check --trace``, ``serve``) then defaults to this interpreter, the one the
package is installed in: the command reads it from ``PT2LSP_DEFAULT_PYTHON``.
"""

from __future__ import annotations

import os
import signal
import sys

from pt2lsp import _native


def main() -> int:
    os.environ["PT2LSP_DEFAULT_PYTHON"] = sys.executable
    # Python turns Ctrl-C into KeyboardInterrupt, checked only between bytecodes: the command
    # runs in native code, so it gets the default action back, as a native binary has.
    if hasattr(signal, "SIGINT"):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    return _native.main(["pt2lsp", *sys.argv[1:]])


if __name__ == "__main__":
    sys.exit(main())
