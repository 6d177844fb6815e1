"""PT601: an export that succeeded but computes something else than eager.

torch.export runs `forward` once and keeps every Python value it met as a constant: a counter
on the module, `random.random()`, the clock. After a successful export the program and the
eager model run side by side on fresh inputs (the example inputs re-drawn at sizes across each
dynamic dimension's range), eager twice to expose state that changes between calls. When they
disagree, a second export of the same model is compared with the first, node by node: the
constants that changed between the two exports are the frozen values, and their nodes'
`stack_trace` names the user's line. When none changed and the example inputs share memory,
the export traced them as one tensor (pytorch #139805): the finding is on `example_args`.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import time
from collections.abc import Callable

from .budget import DIVERGENCE_BUDGET_SECONDS, Stopwatch, seconds_left, time_budget
from .entrypoint import Target
from .findings import Finding, Location, Related, binding_finding, located
from .hooks import module_hooks
from .locations import user_place
from .outputs import compare_outputs
from .program_info import finite
from .workspace import Workspace

# Ops whose results are random by design: a program holding one is compared under one seed,
# and a disagreement is not blamed on frozen state.
RANDOM_OPS = frozenset(
    {
        "bernoulli",
        "dropout",
        "native_dropout",
        "multinomial",
        "normal",
        "poisson",
        "rand",
        "rand_like",
        "randint",
        "randint_like",
        "randn",
        "randn_like",
        "randperm",
        "uniform",
        "exponential",
        "geometric",
        "cauchy",
        "log_normal",
    }
)


# Ops that allocate without setting the values: what they hold is whatever the memory held, so
# two runs of the same program already disagree on it.
UNINITIALISED_OPS = frozenset({"empty", "empty_like", "new_empty", "empty_strided", "new_empty_strided", "empty_permuted"})

# Ops that set every value of the tensor they are given (its shape is all they read of it).
DEFINING_OPS = frozenset(
    {"fill", "zero", "copy", "uniform", "normal", "random", "full_like", "zeros_like", "ones_like", "rand_like", "randn_like"}
)


# The most sample sets tried, and the largest size a dynamic dimension is given (the check must
# stay cheap beside the export).
SAMPLES = 3


SIZE_CAP = 64


@dataclasses.dataclass
class Divergence:
    """The exported program disagrees with eager."""

    message: str
    place: Location | None
    # The places a second export froze differently, after the first (the blamed one).
    more: list[Location] = dataclasses.field(default_factory=list)
    # The example inputs alias each other: the finding is about the binding that passes the
    # tensor again, "args" (`example_args`) or "kwargs" (`example_kwargs`), not `model`.
    aliased_in: str = ""


def check_divergence(
    model,
    program,
    args: tuple,
    kwargs: dict,
    export_again: Callable[[], object],
    is_user_file: Callable[[str], bool],
    stopwatch: Stopwatch | None = None,
) -> Divergence | None:
    """Runs `program` and `model` on fresh inputs; a disagreement is a Divergence placed on the
    user's line that froze a value (`export_again` exports the model once more for that). With a
    `stopwatch`, no run starts that would end past its deadline (it raises instead)."""
    import torch

    if _has_random_ops(program):
        return None
    # The program's module shares the model's buffer tensors: a copy of its own, so that each
    # side's in-place updates stay its own.
    module = copy.deepcopy(program.module())
    _align_buffers(module, model)
    # Outputs made from uninitialised memory are compared by shape and dtype only.
    undefined = undefined_outputs(program)
    for sample_args, sample_kwargs, sizes in sample_inputs(program, args, kwargs):
        try:
            with torch.no_grad():
                # Program and eager in lockstep, twice: state both keep (a buffer updated in
                # place) moves on both sides, while a Python value the export froze does not.
                # Each run gets its own copy of the inputs: a model may mutate them.
                runs = []
                for _ in range(2):
                    torch.manual_seed(0)
                    exported = timed(stopwatch, module, _copied(sample_args), _copied(sample_kwargs))
                    torch.manual_seed(0)
                    eager = timed(stopwatch, model, _copied(sample_args), _copied(sample_kwargs))
                    runs.append(compare_outputs(eager, exported, shape_only=undefined).detail)
        except Exception:  # noqa: BLE001 - a sample outside what the model accepts proves nothing
            continue
        first, second = runs
        if first is None and second is None:
            continue
        where = f" (input shapes {sizes})" if sizes else ""
        if first is None:
            what = f"on a second call{where} the exported program and eager disagree ({second})"
        else:
            what = f"on fresh inputs{where} the exported program and eager disagree ({first})"
        places = frozen_places(program, _safely(export_again), is_user_file)
        if places:
            place, value = places[0]
            message = (
                f"the export succeeded but is wrong: {what}; torch.export ran `forward` once and kept "
                f"{value} here as a constant. Keep changing state in a buffer (`register_buffer`) "
                "updated in place, pass the value as an input, or draw it with a torch op (`torch.rand`)"
            )
            return Divergence(message, place, [more for more, _ in places[1:]])
        aliased = aliased_inputs(args, kwargs)
        if aliased:
            message = (
                f"the export succeeded but is wrong: {what}; the example inputs pass one tensor at several "
                f"places ({', '.join(aliased)}), torch.export traced them as one, and the program computes "
                "something else when they are different tensors. Give each input a tensor of its own "
                "(`.clone()`), as the model will get at run time"
            )
            aliased_in = "kwargs" if aliased[-1].startswith("`example_kwargs") else "args"
            return Divergence(message, None, aliased_in=aliased_in)
        hooks = module_hooks(model, is_user_file)
        if hooks:
            # Export ran the hooks once, while tracing: what they change outside the tensors
            # (a count they keep) is frozen, and their line is where it changes.
            named = ", ".join(f"`{hook.name}` ({hook.kind})" for hook in hooks)
            message = (
                f"the export succeeded but is wrong: {what}; torch.export ran the hooks registered on the model "
                f"once, while exporting ({named}), and keeps what they read as constants. Move the hook's work into "
                "`forward`, with changing state in a buffer (`register_buffer`) updated in place"
            )
            return Divergence(message, hooks[0].place, [hook.place for hook in hooks[1:]])
        message = (
            f"the export succeeded but is wrong: {what}; torch.export ran `forward` once and keeps every Python "
            "value it read as a constant, but a second export froze the same values, so pt2lsp cannot say "
            "which one changes between calls"
        )
        return Divergence(message, None)
    return None


def timed(stopwatch: Stopwatch | None, run: Callable[..., object], args: tuple, kwargs: dict) -> object:
    """`run(*args, **kwargs)`, through `stopwatch` when there is one."""
    if stopwatch is None:
        return run(*args, **kwargs)
    return stopwatch.step(lambda: run(*args, **kwargs))


def aliased_inputs(args: tuple, kwargs: dict) -> list[str]:
    """The places (`args[0][1]`, `kwargs['y']`) of example tensors that share their memory with
    an earlier one; empty when every input tensor is its own."""
    import torch
    from torch.utils import _pytree as pytree

    seen: dict[int, str] = {}
    aliased: list[str] = []
    for path, leaf in pytree.tree_flatten_with_path((args, kwargs))[0]:
        if not isinstance(leaf, torch.Tensor) or leaf.numel() == 0:
            continue
        place = ("args" if path[0].idx == 0 else "kwargs") + pytree.keystr(path[1:])
        storage = leaf.untyped_storage().data_ptr()
        if storage in seen:
            if seen[storage] not in aliased:
                aliased.append(seen[storage])
            aliased.append(place)
        else:
            seen[storage] = place
    return [f"`example_{place}`" for place in aliased]


def _align_buffers(module, model) -> None:
    """Gives eager's buffers the program's values: exporting may have run `forward` on the
    model's own buffers, and a buffer both sides update (a step count) must start equal."""
    import torch

    eager = dict(model.named_buffers())
    with torch.no_grad():
        for name, value in module.named_buffers():
            target = eager.get(name)
            if target is not None and target.shape == value.shape and target.dtype == value.dtype:
                target.copy_(value)


def _copied(value):
    """`value` with every tensor in it cloned."""
    import torch
    from torch.utils import _pytree as pytree

    return pytree.tree_map(lambda leaf: leaf.clone() if isinstance(leaf, torch.Tensor) else leaf, value)


def _safely(export: Callable[[], object]):
    try:
        return export()
    except Exception:  # noqa: BLE001 - the second export only helps to place the finding
        return None


def _has_random_ops(program) -> bool:
    for node in program.graph.nodes:
        if node.op == "call_function" and _op_name(node.target) in RANDOM_OPS:
            return True
    return False


def undefined_outputs(program) -> frozenset[int]:
    """The positions of the program's outputs whose values come from uninitialised memory: an
    `empty`-like allocation, and what is computed from it, unless an op sets every value first
    (`fill_`, `copy_`, `zero_`, a random fill)."""
    undefined = set()
    for node in program.graph.nodes:
        if node.op != "call_function":
            continue
        name = _op_name(node.target)
        if name in UNINITIALISED_OPS:
            undefined.add(node.name)
        elif name not in DEFINING_OPS and any(arg.name in undefined for arg in node.all_input_nodes):
            undefined.add(node.name)
    outputs = [spec for spec in program.graph_signature.output_specs if str(spec.kind).endswith("USER_OUTPUT")]
    return frozenset(index for index, spec in enumerate(outputs) if getattr(spec.arg, "name", None) in undefined)


def _op_name(target) -> str:
    """`aten.native_dropout.default` → `native_dropout`."""
    name = getattr(target, "__name__", None) or str(target)
    overload = getattr(target, "_overloadpacket", None)
    if overload is not None:
        name = getattr(overload, "__name__", name)
    return name.split(".")[0].rstrip("_")


def sample_inputs(program, args: tuple, kwargs: dict):
    """Fresh inputs like the examples, at up to SAMPLES sets of sizes for the program's dynamic
    dimensions (each symbol at the bottom of its range, one past its example, and near the top,
    capped), and at the example sizes when nothing is dynamic: (args, kwargs, sizes) each."""
    import torch
    from torch.utils import _pytree as pytree

    leaves, spec = pytree.tree_flatten((args, kwargs))
    placeholders = [node for node in program.graph.nodes if node.op == "placeholder"]
    user_inputs = [
        spec_.arg.name
        for spec_ in program.graph_signature.input_specs
        if spec_.kind.name == "USER_INPUT" and hasattr(spec_.arg, "name")
    ]
    by_name = {node.name: node for node in placeholders}
    fake_shapes = [getattr(by_name[name].meta.get("val"), "shape", None) if name in by_name else None for name in user_inputs]
    tensor_leaves = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
    if len(fake_shapes) != len(tensor_leaves):
        # Inputs the program flattened differently (non-tensor leaves among them): only the
        # example sizes, redrawn.
        fake_shapes = [None] * len(tensor_leaves)
    symbols = _symbol_examples(fake_shapes, tensor_leaves)
    choices = _size_choices(program, symbols)
    tried = set()
    for values in choices:
        sizes = tuple(sorted((str(symbol), size) for symbol, size in values.items()))
        if sizes in tried:
            continue
        tried.add(sizes)
        new_leaves = []
        shapes = iter(fake_shapes)
        for leaf in leaves:
            if not isinstance(leaf, torch.Tensor):
                new_leaves.append(leaf)
                continue
            shape = next(shapes)
            size = list(leaf.shape) if shape is None else [_evaluate(dim, values) for dim in shape]
            if any(s is None for s in size):
                size = list(leaf.shape)
            new_leaves.append(_redraw(leaf, size))
        sample_args, sample_kwargs = pytree.tree_unflatten(new_leaves, spec)
        shapes = [tuple(leaf.shape) for leaf in new_leaves if isinstance(leaf, torch.Tensor)]
        described = ", ".join(str(list(shape)) for shape in shapes) if values else ""
        yield tuple(sample_args), dict(sample_kwargs), described


def _symbol_examples(fake_shapes, tensor_leaves) -> dict:
    """Each plain symbol of the program's input shapes with its example size."""
    found = {}
    for shape, leaf in zip(fake_shapes, tensor_leaves, strict=False):
        if shape is None:
            continue
        for dim, example in zip(shape, leaf.shape, strict=False):
            node = getattr(dim, "node", None)
            expr = getattr(node, "expr", None)
            if expr is not None and getattr(expr, "is_Symbol", False):
                found.setdefault(expr, int(example))
    return found


def _size_choices(program, symbols: dict) -> list[dict]:
    if not symbols:
        return [{}]
    ranges = getattr(program, "range_constraints", {}) or {}
    per_symbol = {}
    for symbol, example in symbols.items():
        bounds = ranges.get(symbol)
        low = finite(getattr(bounds, "lower", None)) or 2
        high = finite(getattr(bounds, "upper", None))
        low = max(low, 2)
        top = min(high if high is not None else max(example * 2, low + 2), max(SIZE_CAP, example))
        middle = example + 1 if high is None or example + 1 <= high else example
        per_symbol[symbol] = [low, middle, top]
    return [{symbol: sizes[i] for symbol, sizes in per_symbol.items()} for i in range(SAMPLES)]


def _evaluate(dim, values: dict) -> int | None:
    node = getattr(dim, "node", None)
    expr = getattr(node, "expr", None)
    if expr is None:
        return int(dim)
    try:
        return int(expr.subs(values))
    except (TypeError, ValueError):
        return None


def _redraw(example, size: list[int]):
    """A tensor of `size` drawn like `example`: floats uniform over its range, integers among its
    values' range (indices stay valid), booleans at random."""
    import torch

    if example.dtype == torch.bool:
        return torch.rand(size) > 0.5
    if example.is_floating_point():
        low, high = (float(example.min()), float(example.max())) if example.numel() else (-1.0, 1.0)
        if low == high:
            return torch.full(size, low, dtype=example.dtype)
        return torch.empty(size, dtype=example.dtype).uniform_(low, high)
    if example.is_complex():
        return torch.randn(size, dtype=example.dtype)
    low, high = (int(example.min()), int(example.max())) if example.numel() else (0, 1)
    return torch.randint(low, high + 1, size, dtype=example.dtype)


def frozen_places(first, second, is_user_file: Callable[[str], bool]) -> list[tuple[Location, str]]:
    """The user lines whose frozen values differ between two exports of one model, each with the
    value the first froze (in words), first node first."""
    if second is None:
        return []
    import torch

    found: list[tuple[Location, str]] = []
    seen = set()

    def add(node, what: str) -> None:
        place = user_place(node, is_user_file)
        if place is not None and (place.file, place.line) not in seen:
            seen.add((place.file, place.line))
            found.append((place, what))

    nodes_a = [node for node in first.graph.nodes if node.op == "call_function"]
    nodes_b = [node for node in second.graph.nodes if node.op == "call_function"]
    for a, b in zip(nodes_a, nodes_b, strict=False):
        if a.target != b.target:
            # The graphs part ways: a branch on a frozen value went the other way.
            add(a, "the branch it took")
            break
        literals_a, literals_b = _literals(a.args, a.kwargs), _literals(b.args, b.kwargs)
        if literals_a != literals_b:
            changed = [x for x, y in zip(literals_a, literals_b, strict=False) if x != y]
            add(a, f"`{changed[0] if changed else literals_a}`")
    constants_a = getattr(first, "constants", {}) or {}
    constants_b = getattr(second, "constants", {}) or {}
    for name, value in constants_a.items():
        other = constants_b.get(name)
        if isinstance(value, torch.Tensor) and isinstance(other, torch.Tensor):
            if value.shape != other.shape or not torch.equal(value, other):
                for node in first.graph.nodes:
                    if node.op == "placeholder" and _lifted_name(first, node.name) == name:
                        for user in node.users:
                            add(user, f"the tensor `{name}`")
                            break
    return found


def _lifted_name(program, placeholder: str) -> str | None:
    for spec in program.graph_signature.input_specs:
        if getattr(spec.arg, "name", None) == placeholder:
            return spec.target
    return None


def _literals(args, kwargs) -> list:
    """The Python numbers and booleans among a node's arguments, in order."""
    out = []

    def walk(value) -> None:
        if isinstance(value, bool | int | float):
            out.append(value)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)

    walk(args)
    walk(kwargs)
    return out


def divergence_findings(program, target: Target, workspace: Workspace) -> list[Finding]:
    """PT601 when the exported program disagrees with eager on fresh inputs; none otherwise,
    and none when the check cannot run (fake weights, a model that fails on the new inputs)."""
    import torch

    if target.fake_weights:
        return []

    try:
        stopwatch = Stopwatch(time.monotonic() + seconds_left(DIVERGENCE_BUDGET_SECONDS))
        with time_budget(DIVERGENCE_BUDGET_SECONDS):
            found = check_divergence(
                target.model,
                program,
                tuple(target.args),
                dict(target.kwargs or {}),
                lambda: target.export_with(torch.export.export),
                workspace.contains,
                stopwatch,
            )
    except MemoryError:
        raise
    except BaseException as exc:  # noqa: BLE001 - the check only adds to a successful export
        if isinstance(exc, KeyboardInterrupt):
            raise
        return []
    if found is None:
        return []
    examples = {"args": target.args_binding, "kwargs": target.kwargs_binding}.get(found.aliased_in)
    if found.place is not None:
        finding = located("PT601", Location(os.path.abspath(found.place.file), found.place.line), found.message)
    elif examples is not None:
        finding = binding_finding(*examples, "PT601", found.message)
    else:
        file, name = target.model_binding or (workspace.entry_file, "model")
        finding = binding_finding(file, name, "PT601", found.message)
    finding.related = [
        Related(os.path.abspath(place.file), place.line, None, "another value frozen by the export") for place in found.more
    ]
    return [finding]
