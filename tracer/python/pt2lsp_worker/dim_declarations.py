"""Where each `Dim` of the exported `dynamic_shapes` is declared: the module-level binding in the
user's files that holds that very object (`BATCH = Dim("batch")` in `pkg/dims.py`), so that
torch's fix for the dimension edits the line that declares it, whichever file that is."""

from __future__ import annotations

import sys

from .findings import Finding
from .workspace import Workspace, binding_line


def _dims_in(spec, found: dict[str, object], depth: int = 0) -> None:
    """The `Dim` objects of a `dynamic_shapes` pytree, by their torch name."""
    if depth > 8 or spec is None:
        return
    if isinstance(spec, dict):
        for value in spec.values():
            _dims_in(value, found, depth + 1)
    elif isinstance(spec, (list, tuple)):
        for value in spec:
            _dims_in(value, found, depth + 1)
    else:
        name = getattr(spec, "__name__", None)
        if isinstance(name, str) and "Dim" in type(spec).__name__:
            found.setdefault(name, spec)


def declared_dims(dynamic_shapes, workspace: Workspace) -> dict[str, tuple[str, int]]:
    """{torch name: (file, line)} of the module-level bindings, in the user's files, of the
    `Dim`s `dynamic_shapes` holds. A `Dim` made inside a function, or bound in no user module,
    is absent."""
    dims: dict[str, object] = {}
    _dims_in(dynamic_shapes, dims)
    declared: dict[str, tuple[str, int]] = {}
    if not dims:
        return declared
    for module in list(sys.modules.values()):
        file = getattr(module, "__file__", None)
        if not file or not workspace.contains(file):
            continue
        for binding, value in list(vars(module).items()):
            for name, dim in dims.items():
                if value is dim and name not in declared:
                    line = binding_line(file, binding)
                    if line is not None:
                        declared[name] = (file, line)
    return declared


def _spec_declaration(spec_binding, workspace: Workspace) -> tuple[str, int, str] | None:
    """(file, line, name) of the module-level name that binds the whole `dynamic_shapes`
    (`DYNAMIC_SHAPES` in `pkg/export_spec.py`, named by an entrypoint table), in the user's
    files: a `Dim(...)` written inside it is declared there. `None` for a spec written at an
    export call, or read through an attribute or a call."""
    if not isinstance(spec_binding, tuple) or len(spec_binding) != 2:
        return None
    file, name = spec_binding
    if not isinstance(file, str) or not isinstance(name, str) or not name.isidentifier():
        return None
    if not workspace.contains(file):
        return None
    line = binding_line(file, name)
    return None if line is None else (file, line, name)


def mark_declarations(findings: list[Finding], dynamic_shapes, workspace: Workspace, spec_binding=None, table_spec=None) -> None:
    """Sets on each suggested fix the file and line that declare its dimension: the binding of
    the `Dim` itself, else the module-level binding of the whole spec that writes it, else the
    entrypoint table's `dynamic-shapes` line (`table_spec`, (file, line)) when the spec is
    written inside the table's string."""
    if not any(finding.fixes for finding in findings):
        return
    declared = declared_dims(dynamic_shapes, workspace)
    in_spec = _spec_declaration(spec_binding, workspace)
    for finding in findings:
        for fix in finding.fixes:
            place = declared.get(fix.dim)
            if place is not None:
                fix.declared_file, fix.declared_line = place
            elif in_spec is not None:
                fix.declared_file, fix.declared_line, fix.declared_spec = in_spec
            elif table_spec is not None:
                fix.declared_file, fix.declared_line = table_spec
