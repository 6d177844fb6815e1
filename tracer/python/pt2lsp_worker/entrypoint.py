"""The entrypoint of a job: the model, its example inputs and `dynamic_shapes`, from the file's
module-level names or from `[[tool.pt2lsp.entrypoints]]` specs; PT503 where they cannot be built."""

from __future__ import annotations

import ast
import gc
import importlib
import importlib.util
import os
import sys
import traceback

from .findings import Finding, Location, Related, binding_finding, frame_location, located
from .locations import deepest_user_frame
from .lowering import requested_targets
from .script import CallArgument, EntrypointStopped, program_environment, reach_export_call
from .text import first_lines
from .weights import (
    PROBE_BYTES,
    ParametersTooLarge,
    counting_parameters,
    forget_modules_since,
    meta_parameter_bytes,
    parameter_budget,
)
from .workspace import Workspace, binding_node


class EntrypointError(Exception):
    """The model or its example inputs could not be built; carries the finding that says why."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


class Target:
    """What one job exports: the model, its example inputs and `dynamic_shapes`, and where the
    user wrote each."""

    def __init__(self) -> None:
        self.model = None
        self.args: tuple = ()
        self.kwargs: dict | None = None
        self.dynamic_shapes = None
        self.strict = False
        # (file, name) of the module-level binding of dynamic_shapes, for PT403/PT401 locations.
        self.spec_binding: tuple[str, str] | None = None
        self.model_binding: tuple[str, str] | None = None
        # (file, 1-based line, name) of the `model` key of the `[[tool.pt2lsp.entrypoints]]`
        # table the target comes from, where the entrypoint is written.
        self.table_model: tuple[str, int, str] | None = None
        # (file, 1-based line) of the table's `dynamic-shapes` key: a `Dim(...)` written inside
        # that string is declared there.
        self.table_spec: tuple[str, int] | None = None
        # (file, name) of example_args and example_kwargs, for PT404/PT405 locations.
        self.args_binding: tuple[str, str] | None = None
        self.kwargs_binding: tuple[str, str] | None = None
        # Built under FakeTensorMode: parameters and inputs have shapes and no storage; why.
        self.fake_weights = False
        self.fake_reason = ""
        # Deployment targets to lower the exported program for (`lowering.TARGETS` names).
        self.targets: list[str] = []

    def export_with(self, exporter):
        """`exporter` (torch.export.export or draft_export) run on the model as the user declared it."""
        return exporter(self.model, self.args, self.kwargs, dynamic_shapes=self.dynamic_shapes, strict=self.strict)


def _fake_weights_requested(job: dict, workspace: Workspace) -> bool:
    """`fake-weights = true` of the entrypoint (or the job), else, for the file convention, a
    module-level `fake_weights = True` in the file, read from its syntax tree: the model is
    built when the module is imported, so the mode must be chosen before that."""
    entry = job.get("entrypoint") or {}
    if entry.get("fake_weights") is not None:
        return bool(entry["fake_weights"])
    if job.get("fake_weights"):
        return True
    if job.get("entrypoint") is not None:
        return False
    node = binding_node(workspace.entry_file, "fake_weights")
    value = getattr(node, "value", None)
    return isinstance(value, ast.Constant) and value.value is True


def load_entrypoint(job: dict, workspace: Workspace) -> Target:
    """The model and its inputs; under FakeTensorMode when fake weights are asked for, or when
    the parameters of a real build would not fit in memory (see `weights`), so that a model of
    any size is checked without allocating its parameters."""
    if _fake_weights_requested(job, workspace):
        reason = "fake-weights = true (or fake_weights = True in the file) asks for it"
    else:
        budget = parameter_budget(job.get("memory_limit_mb"))
        if budget is None:
            return _load_entrypoint(job, workspace)
        before = set(sys.modules)
        try:
            with counting_parameters(min(PROBE_BYTES, budget)):
                return _load_entrypoint(job, workspace)
        except ParametersTooLarge:
            pass
        # A large model: what the stopped build made goes, and its size is counted on meta.
        forget_modules_since(before)
        gc.collect()
        total = meta_parameter_bytes(lambda: _load_entrypoint(job, workspace))
        forget_modules_since(before)
        if total is not None and total <= budget:
            return _load_entrypoint(job, workspace)
        if total is None:
            try:
                with counting_parameters(budget):
                    return _load_entrypoint(job, workspace)
            except ParametersTooLarge as too_large:
                total = too_large.parameter_bytes
            forget_modules_since(before)
            gc.collect()
        reason = ParametersTooLarge(total, budget).reason()
    from torch._subclasses.fake_tensor import FakeTensorMode

    # Real tensors made before the mode (module-level constants of a library) stay usable.
    with FakeTensorMode(allow_non_fake_inputs=True):
        target = _load_entrypoint(job, workspace)
    target.fake_weights = True
    target.fake_reason = reason
    return target


def _load_entrypoint(job: dict, workspace: Workspace) -> Target:
    if job.get("call"):
        target = Target()
        _load_call(job, workspace, target)
        return _checked(target, job.get("entrypoint"), job, workspace)
    # The entry's module-level code runs as a script run with no arguments would: a
    # `parser.parse_args()` there reads its defaults, not the worker's own command line.
    with program_environment(workspace.entry_file, []):
        return _checked(_load_bindings(job, workspace), job.get("entrypoint"), job, workspace)


def _load_bindings(job: dict, workspace: Workspace) -> Target:
    """The target an entry file's module-level bindings (`model`, `example_args`, ...) or an
    entrypoint table's `module:expression` values name."""
    entry = job.get("entrypoint")
    target = Target()
    if entry is None:
        path = workspace.entry_file
        module = _import_file(path, workspace)
        target.model_binding = (path, "model")
        if not hasattr(module, "model"):
            raise EntrypointError(binding_finding(path, None, "PT503", "the file defines no module-level `model` to export"))
        if not hasattr(module, "example_args"):
            raise EntrypointError(
                binding_finding(
                    path,
                    "model",
                    "PT503",
                    "`model` is defined but `example_args` is not: define `example_args = (...)`, "
                    "a tuple of example inputs for `model`",
                )
            )
        target.model = module.model
        target.args = _as_args(module.example_args, path, "example_args")
        target.args_binding = (path, "example_args")
        target.kwargs = getattr(module, "example_kwargs", None)
        if hasattr(module, "example_kwargs"):
            target.kwargs_binding = (path, "example_kwargs")
        target.dynamic_shapes = getattr(module, "dynamic_shapes", None)
        if hasattr(module, "dynamic_shapes"):
            target.spec_binding = (path, "dynamic_shapes")
        target.strict = bool(getattr(module, "strict", False)) or bool(job.get("strict"))
        target.targets = requested_targets(job, getattr(module, "targets", None))
    else:
        target.model, where = _resolve(entry, "model", workspace)
        target.model_binding = where
        target.table_model = table_model_of(entry)
        if not entry.get("example_args"):
            name = entry.get("name") or entry["model"]
            raise EntrypointError(
                _table_finding(TableKey(entry, "table"), workspace, None, f"the entrypoint {name!r} has no `example-args`")
            )
        args, args_where = _resolve(entry, "example_args", workspace)
        target.args = _as_args(args, args_where[0], args_where[1], TableKey(entry, "example_args"))
        target.args_binding = args_where
        if entry.get("example_kwargs"):
            target.kwargs, target.kwargs_binding = _resolve(entry, "example_kwargs", workspace)
        if entry.get("dynamic_shapes"):
            target.dynamic_shapes, target.spec_binding = _resolve(entry, "dynamic_shapes", workspace)
            spec_key = TableKey(entry, "dynamic_shapes").location()
            if spec_key is not None and spec_key.line is not None:
                target.table_spec = (spec_key.file, spec_key.line)
        strict = entry.get("strict")
        target.strict = bool(job.get("strict")) if strict is None else bool(strict)
        target.targets = requested_targets(job, entry.get("targets"))
    return target


def _checked(target: Target, entry: dict | None, job: dict, workspace: Workspace) -> Target:
    """`target`, once its model is a module and its keyword arguments a dict (PT503 otherwise)."""
    import torch

    if not isinstance(target.model, torch.nn.Module):
        file, name = target.model_binding or (workspace.entry_file, "model")
        kind = type(target.model).__name__
        if entry is not None and job.get("call") is None and TableKey(entry, "model").location() is not None:
            message = f'`model = "{entry["model"]}"` must be a torch.nn.Module to export, not {kind}'
            raise EntrypointError(_table_finding(TableKey(entry, "model"), workspace, None, message))
        raise EntrypointError(binding_finding(file, name, "PT503", f"`{name}` must be a torch.nn.Module to export, not {kind}"))
    if target.kwargs is not None and not isinstance(target.kwargs, dict):
        raise EntrypointError(binding_finding(workspace.entry_file, "example_kwargs", "PT503", "`example_kwargs` must be a dict"))
    return target


def _load_call(job: dict, workspace: Workspace, target: Target) -> None:
    """The target of an export call in the user's code, from what the call received when the
    program reached it; its bindings are the call's arguments."""
    try:
        received = reach_export_call(job, workspace, _import_file)
    except EntrypointStopped as exc:
        raise EntrypointError(exc.finding) from None
    path = workspace.entry_file
    call = job["call"]
    line, end_line = int(call["line"]), int(call.get("end_line") or call["line"])
    target.model = received.model
    target.args = received.args
    target.kwargs = received.kwargs
    target.dynamic_shapes = received.dynamic_shapes
    target.strict = received.strict or bool(job.get("strict"))
    target.targets = requested_targets(job, received.declared_targets)
    target.model_binding = (path, CallArgument(line, end_line, 0, received.model_parameter, "model"))
    target.args_binding = (path, CallArgument(line, end_line, 1, "args", "args"))
    if received.kwargs is not None:
        target.kwargs_binding = (path, CallArgument(line, end_line, received.kwargs_position, "kwargs", "kwargs"))
    if received.dynamic_shapes is not None:
        target.spec_binding = (path, CallArgument(line, end_line, None, "dynamic_shapes", "dynamic_shapes"))


def _as_args(value, file: str, name: str | None, table: TableKey | None = None) -> tuple:
    if isinstance(value, (tuple, list)):
        return tuple(value)
    kind = type(value).__name__
    if table is not None and table.location() is not None:
        raise EntrypointError(_table_finding(table, None, None, f"`{table.key}` must be a tuple of example inputs, not {kind}"))
    raise EntrypointError(binding_finding(file, name, "PT503", f"`{name}` must be a tuple of example inputs, not {kind}"))


def _module_name(path: str) -> tuple[str | None, str]:
    """The dotted name `import` would know the file by, and the directory it is found from."""
    directory, filename = os.path.split(path)
    stem = os.path.splitext(filename)[0]
    parts = [] if stem == "__init__" else [stem]
    while os.path.isfile(os.path.join(directory, "__init__.py")):
        parent, name = os.path.split(directory)
        parts.append(name)
        if parent == directory:
            break
        directory = parent
    if not parts or not all(part.isidentifier() for part in parts):
        return None, os.path.dirname(path)
    return ".".join(reversed(parts)), directory


def _import_file(path: str, workspace: Workspace):
    dotted, package_root = _module_name(path)
    if package_root not in sys.path:
        sys.path.insert(0, package_root)
    try:
        if dotted and dotted not in sys.modules and dotted not in sys.builtin_module_names:
            module = importlib.import_module(dotted)
            if os.path.realpath(getattr(module, "__file__", "") or "") == os.path.realpath(path):
                return module
            sys.modules.pop(dotted, None)
        name = "__pt2lsp_entry__"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    except EntrypointError:
        raise
    except MemoryError:
        raise
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything, even SystemExit
        if _out_of_memory_error(exc):
            raise MemoryError(str(exc)) from None
        raise EntrypointError(_exception_finding(exc, workspace, path, None, "importing")) from None


def _out_of_memory_error(exc: BaseException) -> bool:
    """torch's allocator reports exhaustion as a RuntimeError."""
    return isinstance(exc, MemoryError) or "can't allocate memory" in str(exc)


def table_model_of(entry: dict) -> tuple[str, int, str] | None:
    """(file, 1-based line, name) of the `model` key of the table `entry` is written as; None
    for settings that came from no file."""
    location = TableKey(entry, "model").location()
    if location is None or location.line is None:
        return None
    return (location.file, location.line, entry.get("name") or str(entry.get("model")))


class TableKey:
    """Where one string of a `[[tool.pt2lsp.entrypoints]]` table is written: the file
    (`pyproject.toml`) and the 1-based line of its key, from the job's `entrypoint.declared`;
    None when the settings came from no file (the editor's own)."""

    def __init__(self, entry: dict, role: str) -> None:
        declared = entry.get("declared") or {}
        self.file = declared.get("file")
        self.line = (declared.get("lines") or {}).get(role)
        self.key = role.replace("_", "-")

    def location(self) -> Location | None:
        if not self.file or not self.line:
            return None
        return Location(os.path.abspath(self.file), int(self.line))


def _resolve(entry: dict, role: str, workspace: Workspace):
    """`module:EXPRESSION`: the module imported, then EXPRESSION (any Python expression:
    `build_model(ModelConfig(hidden=8)).eval()`, `CONFIG.shapes`, `example_inputs()`) evaluated
    with the module's namespace as its globals. Returns (value, (file, name)): the module's
    file and the name the expression starts from, where the value is declared. What cannot be
    resolved is PT503 on the table's line (`_table_finding`)."""
    spec = entry.get(role) or ""
    text = spec.strip()
    module_name, _, expression = text.partition(":")
    module_name, expression = module_name.strip(), expression.strip()
    table = TableKey(entry, role)
    if not expression or not all(part.isidentifier() for part in module_name.split(".")):
        raise EntrypointError(
            _table_finding(
                table,
                workspace,
                None,
                f"`{table.key} = {spec!r}` must read `module:expression` (`models.encoder:build_model()`)",
            )
        )
    quoted = f'`{table.key} = "{text}"`'
    try:
        code = compile(expression, f"<{table.key} of [[tool.pt2lsp.entrypoints]]>", "eval")
    except SyntaxError as exc:
        column = f" (column {exc.offset})" if exc.offset else ""
        raise EntrypointError(
            _table_finding(table, workspace, None, f"{quoted}: `{expression}` is not a Python expression: {exc.msg}{column}")
        ) from None
    try:
        module = importlib.import_module(module_name)
    except MemoryError:
        raise
    except BaseException as exc:  # noqa: BLE001 - user code may raise anything, even SystemExit
        if _out_of_memory_error(exc):
            raise MemoryError(str(exc)) from None
        raise EntrypointError(_table_exception(exc, table, workspace, quoted, f"importing {module_name}")) from None
    file = os.path.abspath(getattr(module, "__file__", "") or workspace.entry_file)
    try:
        value = eval(code, vars(module))  # noqa: S307 - the user's own expression over the user's module
    except MemoryError:
        raise
    except BaseException as exc:  # noqa: BLE001
        if _out_of_memory_error(exc):
            raise MemoryError(str(exc)) from None
        raise EntrypointError(_table_exception(exc, table, workspace, quoted, "evaluating it")) from None
    return value, (file, _root_name(expression))


def _root_name(expression: str) -> str | None:
    """The name an expression starts from (`build_model` in `build_model(cfg).eval()`), through
    calls, attributes and subscripts; None for a literal or anything else."""
    node = ast.parse(expression, mode="eval").body
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, (ast.Attribute, ast.Subscript)):
            node = node.value
        else:
            return None


def _table_exception(exc: BaseException, table: TableKey, workspace: Workspace, quoted: str, doing: str) -> Finding:
    """PT503 for an exception raised while importing a table string's module or evaluating its
    expression: on the table's line, with the user's line that raised it as a related place."""
    summary = first_lines(str(exc), 3)
    message = f"{quoted}: {type(exc).__name__} while {doing}" + (f": {summary}" if summary else "")
    raised = None
    if isinstance(exc, SyntaxError) and exc.filename and workspace.contains(exc.filename):
        raised = Location(os.path.abspath(exc.filename), exc.lineno or 1)
    else:
        frame = deepest_user_frame(traceback.extract_tb(exc.__traceback__), workspace)
        if frame is not None:
            raised = frame_location(frame)
    return _table_finding(table, workspace, raised, message, type(exc).__name__)


def _table_finding(
    table: TableKey, workspace: Workspace | None, raised: Location | None, message: str, what: str = ""
) -> Finding:
    """PT503 on the table's line; where the table's place is not known (settings from the
    editor), on the user's line that raised, else on the entry module's first line."""
    where = table.location()
    if where is None:
        where = raised or Location(os.path.abspath(workspace.entry_file if workspace else ""), 1)
        raised = None
    finding = located("PT503", where, message, origin="entrypoint")
    if raised is not None:
        finding.related.append(Related(raised.file, raised.line, None, f"{what or 'the exception'} raised here"))
    return finding


def _exception_finding(exc: BaseException, workspace: Workspace, file: str, name: str | None, doing: str) -> Finding:
    """PT503 at the deepest frame of the user's workspace in the exception's traceback."""
    message = f"{type(exc).__name__} while {doing}: {first_lines(str(exc), 3)}".rstrip(": ")
    if isinstance(exc, SyntaxError) and exc.filename and workspace.contains(exc.filename):
        column = None
        if exc.offset:
            column = len((exc.text or "")[: exc.offset - 1].encode("utf-8"))
        where = Location(os.path.abspath(exc.filename), exc.lineno or 1, column)
        return located("PT503", where, f"SyntaxError while {doing}: {exc.msg}", origin="entrypoint")
    frame = deepest_user_frame(traceback.extract_tb(exc.__traceback__), workspace)
    if frame is None:
        return binding_finding(file, name, "PT503", message)
    return located("PT503", frame_location(frame), message, origin="entrypoint")
