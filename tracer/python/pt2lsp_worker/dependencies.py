"""The files a job's result depends on, for the trace cache (tracer/src/cache.rs).

A job's findings follow from the code it ran and the files it read: the entry file, every module
the job imported that the warm zygote had not (the user's package, and libraries such as
transformers or torchvision), and the data files it opened (a model's JSON config). The binary
hashes those files' contents and replays the result while every hash still matches.

What the zygote imported before forking (the standard library, torch and what torch imports) is
left out: the binary keys the cache by the interpreter, and `environment_files` names the files
that say which interpreter and which torch these are (a new torch changes `torch/version.py`).
"""

from __future__ import annotations

import os
import re
import sys
import sysconfig

from . import preload

# Where nothing a job reads can change without the interpreter or torch changing too.
_SYSTEM_PREFIXES = ("/proc/", "/sys/", "/dev/")
_INSTALLED = re.compile(r"[/\\](site|dist)-packages[/\\]")


class DependencyRecorder:
    """Started in the job's process before the entrypoint runs; `files()` after it ended."""

    def __init__(self, job_dir: str) -> None:
        self.preloaded = set(sys.modules)
        self.opened: set[str] = set()
        self.ignored = _ignored_directories(job_dir)
        self.stdlib = _standard_library()
        sys.addaudithook(self._audit)

    def _audit(self, event: str, args: tuple) -> None:
        # `open` is raised by `open()` and `io.open_code`; a write does not make a dependency.
        if event != "open" or not args or not isinstance(args[0], str):
            return
        mode = args[1] if len(args) > 1 else "r"
        if isinstance(mode, str) and any(flag in mode for flag in "wax+"):
            return
        self.opened.add(args[0])

    def files(self, entry_file: str) -> list[str]:
        """Absolute paths, sorted, of the regular files the job depended on: with the modules
        the job imported, those of the libraries the zygote imported for it
        (`preload.for_this_job`), whose files may change as the job's own do."""
        found = {os.path.abspath(entry_file)}
        for name, module in list(sys.modules.items()):
            if name in self.preloaded and name.split(".")[0] not in preload.for_this_job:
                continue
            path = getattr(module, "__file__", None)
            if isinstance(path, str):
                found.add(os.path.abspath(path))
        found.update(os.path.abspath(path) for path in self.opened)
        return sorted(path for path in found if self._counts(path))

    def _counts(self, path: str) -> bool:
        if path.startswith(_SYSTEM_PREFIXES) or _under_any(path, self.ignored):
            return False
        # Bytecode follows from its source, which is a dependency itself; Python may rewrite it.
        if f"{os.sep}__pycache__{os.sep}" in path:
            return False
        # A base interpreter's site-packages lies inside its standard library's directory.
        if _under_any(path, self.stdlib) and not _INSTALLED.search(path):
            return False
        return os.path.isfile(path)


def environment_files() -> list[str]:
    """The files whose contents say which interpreter and which torch run the jobs."""
    files = [os.path.realpath(sys.executable)]
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(getattr(torch, "__file__", None), str):
        version = os.path.join(os.path.dirname(torch.__file__), "version.py")
        if os.path.isfile(version):
            files.append(version)
    return files


def _ignored_directories(job_dir: str) -> list[str]:
    """The job's own temporary directory, the worker's package and torch: what is there is the
    job's scratch, or changes only with the binary or with torch, which key the cache already."""
    ignored = [job_dir, os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(getattr(torch, "__file__", None), str):
        ignored.append(os.path.dirname(torch.__file__))
    return [os.path.abspath(path) for path in ignored]


def _standard_library() -> list[str]:
    paths = sysconfig.get_paths()
    return [os.path.abspath(paths[key]) for key in ("stdlib", "platstdlib") if paths.get(key)]


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _under_any(path: str, roots: list[str]) -> bool:
    return any(_under(path, root) for root in roots)
