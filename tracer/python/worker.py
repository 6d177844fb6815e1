"""Starts the pt2lsp tracer worker: the `pt2lsp_worker` package beside this file.

The pt2lsp binary writes both into the worker's private directory and runs

    python DIR/worker.py --socket PATH --token TOKEN --dir DIR

Python puts DIR first on `sys.path`, so the package is found there and nowhere else.
"""

import sys

from pt2lsp_worker.main import main

if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
