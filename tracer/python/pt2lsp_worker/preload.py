"""Libraries the zygote imports before it forks a job, so that the jobs of a run share the cost.

A forked job starts with what the zygote imported: torch and the exporter (`main._warm_up`).
Every model of transformers, timm or torchvision then paid again for its library's import in
its own process (1-3 s each on two cores, measured with transformers 5.23: `import
transformers` 1.1 s, with a model's modeling module 2.7 s). Before forking a job, the zygote
reads the job's entry file and the workspace modules it imports (their `import` statements,
not their code), and imports what they import from the libraries below, the names of a `from
library import Name` included (transformers loads a model's module when its class is first
read). Later jobs that import the same find it done.

Only libraries known to be safe to fork after importing are preloaded: importing them starts
no thread, opens no device and holds no lock (measured for transformers 5.23, timm 1.0.31 and
torchvision 0.29 with a model class read from each: the process keeps the threads it had after
importing torch). Any other library is imported by the job, as before.
Workspace modules are never preloaded: the zygote lives as long as the editor, and a job must
see the user's edits. `PT2LSP_NO_PRELOAD=1` in the environment turns preloading off (a library
that misbehaves once forked, or a measurement of what preloading saves).
"""

from __future__ import annotations

import ast
import importlib
import os
import sys
import time

# Safe to fork after importing (see the module's docstring).
FORK_SAFE = frozenset({"transformers", "timm", "torchvision"})

# At most this many workspace files are read to find a job's imports.
MAX_FILES = 400

# The preloaded libraries the job being forked imports (set by the zygote before each fork):
# its dependency recorder counts their modules, which the job did not import itself.
for_this_job: frozenset[str] = frozenset()


class Preloader:
    """What the zygote has imported for its jobs; one per zygote."""

    def __init__(self) -> None:
        self.attempted: set[str] = set()
        self.loaded: set[str] = set()

    def load_for(self, entry_file: str, roots: list[str]) -> frozenset[str]:
        """Imports what the job's files import from the fork-safe libraries; returns those
        libraries (the top-level names) that are loaded."""
        if os.environ.get("PT2LSP_NO_PRELOAD"):
            return frozenset()
        wanted = library_imports(entry_file, roots)
        for name, attributes in wanted.items():
            key = name + ":" + ",".join(sorted(attributes))
            if key in self.attempted:
                continue
            self.attempted.add(key)
            started = time.monotonic()
            if _import(name, attributes):
                self.loaded.add(name.split(".")[0])
                took = time.monotonic() - started
                if took > 0.05:
                    print(f"pt2lsp-worker: preloaded {name} in {took:.2f} s", file=sys.stderr)
        return frozenset(top for top in (name.split(".")[0] for name in wanted) if top in self.loaded)


def _import(name: str, attributes: set[str]) -> bool:
    """Imports `name` and reads `attributes` of it; False when it fails (the job then imports
    it itself and gets the failure where it happens)."""
    try:
        module = importlib.import_module(name)
        for attribute in sorted(attributes):
            try:
                getattr(module, attribute)
            except AttributeError:
                importlib.import_module(f"{name}.{attribute}")
        return True
    except BaseException as exc:  # noqa: BLE001 - a library that fails to import is the job's to report
        if isinstance(exc, KeyboardInterrupt):
            raise
        return False


def library_imports(entry_file: str, roots: list[str]) -> dict[str, set[str]]:
    """{module: names imported from it} of the fork-safe libraries that `entry_file` and the
    workspace modules it reaches import, read from their import statements."""
    wanted: dict[str, set[str]] = {}
    seen: set[str] = set()
    queue = [os.path.abspath(entry_file)]
    while queue and len(seen) < MAX_FILES:
        path = queue.pop()
        if path in seen:
            continue
        seen.add(path)
        statements = _import_statements(path)
        if statements is None:
            continue
        imports, attribute_reads = statements
        # `import transformers` then `transformers.BertModel`: the names read on a library
        # module count as names imported from it.
        aliases: dict[str, str] = {}
        for level, module, names, bound in imports:
            if level:
                base = _relative_base(path, level)
                target = os.path.join(base, *module.split(".")) if module else base
                queue.extend(_module_files(target, names))
            elif bound is not None:
                if _note(module, set(), path, roots, wanted, queue):
                    aliases[bound] = module
            elif module:
                _note(module, names, path, roots, wanted, queue)
        for name, attribute in attribute_reads:
            if name in aliases:
                wanted[aliases[name]].add(attribute)
    return wanted


# What each file imports, by (path, modification time, size): the zygote reads a job's files
# before every fork, and a project's files mostly stay as they were between jobs.
_STATEMENTS: dict[tuple[str, int, int], tuple[list, set] | None] = {}


def _import_statements(path: str) -> tuple[list, set] | None:
    """The file's imports, each (level, module, names imported from it, the name `import m as
    n` binds or None for a `from` import), and the (name, attribute) pairs it reads; None when
    it cannot be read or parsed."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    key = (path, status.st_mtime_ns, status.st_size)
    if key in _STATEMENTS:
        return _STATEMENTS[key]
    try:
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
    except (OSError, SyntaxError, ValueError):
        found = None
    else:
        imports: list = []
        attribute_reads: set = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imports.extend((0, alias.name, set(), alias.asname or alias.name) for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                names = {alias.name for alias in node.names if alias.name != "*"}
                imports.append((node.level, node.module or "", names, None))
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                attribute_reads.add((node.value.id, node.attr))
        found = (imports, attribute_reads)
    _STATEMENTS[key] = found
    return found


def _note(module: str, names: set[str], path: str, roots: list[str], wanted, queue) -> bool:
    """Files the workspace module `module` stands for go on the queue; a fork-safe library is
    noted with the names imported from it (and True returned)."""
    top = module.split(".")[0]
    for root in [os.path.dirname(path), *roots]:
        found = _module_files(os.path.join(root, *module.split(".")), names)
        if found or os.path.exists(os.path.join(root, top)) or os.path.exists(os.path.join(root, top + ".py")):
            queue.extend(found)
            return False
    if top not in FORK_SAFE:
        return False
    wanted.setdefault(module, set()).update(names)
    return True


def _relative_base(path: str, level: int) -> str:
    base = os.path.dirname(path)
    for _ in range(level - 1):
        base = os.path.dirname(base)
    return base


def _module_files(module_path: str, names: set[str]) -> list[str]:
    """The workspace files a module path stands for: `m.py` or `m/__init__.py`, and the
    submodules among the names imported from a package."""
    files = []
    if os.path.isfile(module_path + ".py"):
        files.append(module_path + ".py")
    init = os.path.join(module_path, "__init__.py")
    if os.path.isfile(init):
        files.append(init)
        for name in names:
            files.extend(_module_files(os.path.join(module_path, name), set()))
    return files
