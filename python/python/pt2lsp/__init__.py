"""pt2lsp: will ``torch.export`` accept this model, and if not, why not?

The API checks Python source in-process, with the same analysis and the same diagnostics as
the ``pt2lsp check`` command::

    import pt2lsp

    for diagnostic in pt2lsp.check(source, "model.py"):
        print(diagnostic)  # model.py:12:9: PT101 [error] `if` needs the value of tensor ...

    pt2lsp.check_paths(["models/"])  # like `pt2lsp check models/`, pyproject.toml included

The ``pt2lsp`` command itself (``check``, ``rule``, ``export``, ``serve``) is installed beside
the interpreter as a console script that runs it in-process; :func:`find_pt2lsp_bin` finds
it, and ``python -m pt2lsp`` runs the same command.
"""

from __future__ import annotations

import os
import sys
import sysconfig

from pt2lsp._native import Diagnostic, Edit, Fix, Related, __version__, check, check_paths

__all__ = [
    "Diagnostic",
    "Edit",
    "Fix",
    "Related",
    "__version__",
    "check",
    "check_paths",
    "find_pt2lsp_bin",
]


def find_pt2lsp_bin() -> str:
    """The path of the ``pt2lsp`` executable installed with this package.

    pip puts it in the scripts directory of the scheme it installed into: the environment's
    (``.venv/bin``), the user's (``~/.local/bin`` for ``pip install --user``), or ``bin/``
    beside the package for ``pip install --target``.

    Raises:
        FileNotFoundError: when no installed ``pt2lsp`` executable is found.
    """
    name = "pt2lsp" + (sysconfig.get_config_var("EXE") or "")
    candidates = [sysconfig.get_path("scripts")]
    user_scheme = _user_scheme()
    if user_scheme is not None:
        candidates.append(sysconfig.get_path("scripts", scheme=user_scheme))
    candidates.append(os.path.dirname(sys.executable))
    # `pip install --target DIR` puts the package in DIR and the scripts in DIR/bin.
    candidates.append(os.path.join(os.path.dirname(os.path.dirname(__file__)), "bin"))
    for directory in candidates:
        path = os.path.join(directory, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    searched = ", ".join(dict.fromkeys(candidates))
    raise FileNotFoundError(
        f"the {name} executable is not installed beside the pt2lsp package (looked in "
        f"{searched}); reinstall the package with pip"
    )


def _user_scheme() -> str | None:
    if sys.version_info >= (3, 10):
        return sysconfig.get_preferred_scheme("user")
    if os.name == "nt":
        return "nt_user"
    if sys.platform == "darwin" and sys._framework:  # type: ignore[attr-defined]
        return "osx_framework_user"
    return "posix_user"
