"""What a failed export means: one exception of torch.export, classified into a rule and placed
on the user's line (or on the entrypoint's spec or examples when the failure is about them)."""

from __future__ import annotations

import linecache

from .compiled import compiled_binding, compiled_wrapper
from .constraints import parse_constraint_violation
from .data_dependent import data_dependent_code, data_dependent_message
from .entrypoint import Target
from .examples import (
    all_dims,
    example_size_conflict,
    example_size_message,
    example_size_specializations,
    inputs_named,
    inputs_with_dims,
    place_on_examples,
)
from .exceptions import exception_chain, is_kind, qualified_name
from .fake_kernels import missing_fake_kernel
from .findings import Finding, Location, located
from .fixed_state import mismatch_message
from .graph_breaks import graph_break_code, unsupported_message
from .hooks import global_hooks, skipped_module_forward
from .leaked_constants import refused_leak
from .locations import exception_location, library_frames, user_stack_in_message
from .pytree_types import unregistered_finding, unregistered_type
from .shape_vars import declared_symbols
from .spec import blamed_spec_keys, keys_past_rank, place_on_spec, raised_in_dynamic_shapes
from .tensor_subclasses import ungraphable_subclass_message, ungraphable_subclass_spec
from .text import first_lines, first_sentence, trim
from .workspace import Workspace


def classify(exc: BaseException, target: Target, workspace: Workspace, definitions: dict[str, Location]) -> Finding:
    """The finding `exc` stands for; `definitions` are where custom operators are defined."""
    chain = exception_chain(exc)
    guard = next((e for e in chain if is_kind(e, "GuardOnDataDependentSymNode")), None)
    user_error = next((e for e in chain if is_kind(e, "UserError")), None)
    error_type = getattr(getattr(user_error, "error_type", None), "name", None)
    unsupported = next((e for e in chain if is_kind(e, "Unsupported")), None)
    messages = "\n".join(str(e) for e in chain)
    location = exception_location(chain, workspace)
    library = library_frames(chain, workspace)

    def finding(code: str, message: str, where: Location | None = location, **facts) -> Finding:
        return located(code, where, message, exception=qualified_name(exc), related=list(library), **facts)

    if guard is not None:
        graph_text = str(getattr(guard, "partial_fx_graph", "") or "")
        code = data_dependent_code(guard, chain, workspace, graph_text)
        line = linecache.getline(location.file, location.line) if location and location.line else None
        declared = declared_symbols(target, graph_text)
        tested_at = (location.file, location.line) if location and location.line else None
        message = data_dependent_message(
            guard, code, graph_text, workspace, source_line=line, declared=declared, tested_at=tested_at
        )
        return finding(code, message, collectable=True)
    if user_error is not None and error_type == "CONSTRAINT_VIOLATION":
        message, fixes, dims = parse_constraint_violation(str(user_error))
        specialized = example_size_specializations(str(user_error))
        if specialized:
            # The example's size 0 or 1 is the cause, not the model: the static PT405 says the
            # same on the same line, and the fix changes the example (the server's `dim_fix`).
            out = finding(
                "PT405", example_size_message(specialized), None, collectable=True, example_size=specialized, fixes=fixes
            )
            place_on_examples(out, target, inputs_with_dims(target, set(specialized)))
            return out
        return finding(
            "PT401",
            message,
            location if user_stack_in_message(str(user_error)) else None,
            collectable=True,
            constraint=True,
            dims=dims,
            violation=str(user_error),
            fixes=fixes,
        )
    if user_error is not None and error_type == "INVALID_INPUT" and compiled_wrapper(target.model):
        # torch names the wrapper's `args`, never `torch.compile`: the cause is the module given.
        out = finding(
            "PT204",
            "the module exported is a `torch.compile` wrapper, whose `forward` is `(*args, **kwargs)`: "
            f"{trim(str(user_error))} Export the module itself, before `torch.compile` (or `model._orig_mod`)",
            None,
        )
        out.place(compiled_binding(target, workspace))
        return out
    if user_error is not None and error_type == "INVALID_INPUT":
        out = finding("PT403", trim(str(user_error)), None)
        place_on_spec(out, target, blamed_spec_keys(str(user_error)))
        return out
    example_size = example_size_conflict(messages)
    if example_size is not None and (example_size[1] or any(is_kind(e, "ConstraintViolationError") for e in chain)):
        message, key = example_size
        out = finding("PT405", message, None)
        place_on_examples(out, target, inputs_named(target, key) if key else inputs_with_dims(target, all_dims(target)))
        return out
    if raised_in_dynamic_shapes(chain, target, workspace):
        out = finding("PT403", f"dynamic_shapes does not fit the inputs: {type(exc).__name__}: {trim(str(exc))}", None)
        place_on_spec(out, target, keys_past_rank(target))
        return out
    fake = missing_fake_kernel(chain, messages)
    if fake is not None:
        where = definitions.get(fake) or location
        op = fake.replace("::", ".")
        return finding(
            "PT301",
            f"operator {op} has no fake (meta) kernel, so export cannot propagate shapes through it: "
            f'register one with @torch.library.register_fake("{fake}")',
            where,
            collectable=True,
            op=fake,
        )
    if unsupported is not None:
        hooks = global_hooks(workspace.contains) if skipped_module_forward(messages) else []
        if hooks:
            # torch stops in its own wrapper of the module: the user's cause is the global hook.
            hook = hooks[0]
            return finding(
                "PT202",
                f"strict export cannot trace the {hook.kind} `{hook.name}` (registered with "
                "`torch.nn.modules.module.register_module_forward_hook` or its pre-hook kin): it stops in torch's "
                "wrapper of the exported module. Register it on the model instead (`model.register_forward_hook`), "
                "which export traces, or export non-strict: " + unsupported_message(unsupported),
                hook.place,
            )
        return finding(graph_break_code(unsupported), unsupported_message(unsupported))
    if any(is_kind(e, "DataDependentOutputException") for e in chain):
        op = first_lines(str(exc), 1)
        return finding("PT101", f"the result of {op} depends on the tensor's values, which export cannot branch on")
    if ".numpy() is not supported" in messages:
        return finding(
            "PT201", "`.numpy()` (or a NumPy call on a tensor) is not supported while exporting: " + first_lines(messages, 1)
        )
    if any(isinstance(e, TypeError) for e in chain) and "of type SymInt" in messages and "ufunc" in messages:
        # NumPy applied to a size of a dynamic dimension: the size is a `SymInt` while tracing.
        return finding(
            "PT201",
            "a NumPy function got a size of a dynamic dimension, which is a symbolic integer (`SymInt`) while "
            "exporting: " + first_lines(messages, 1),
        )
    if any(is_kind(e, "FakeTensorDeviceMismatchError") for e in chain) or (
        "is not on the expected device" in messages or "to be on the same device" in messages
    ):
        # A tensor the code put on another device (`.cuda()` in `forward`) meets the inputs.
        return finding(
            "PT604",
            "tensors on two devices meet here: code that moves a tensor to another device (`.cuda()`, "
            '`device="cuda"`) while the inputs are elsewhere fails to export: ' + first_lines(messages, 1),
        )
    if any(isinstance(e, TypeError) for e in chain) and "tuple of ints" in messages and "float" in messages:
        # A size computed as a float (`(window - kernel) / skip`, Python 2's `/`): torch takes
        # only ints as sizes, in eager as while exporting.
        return finding(
            "PT605",
            "a size is a float where torch takes only ints (a true division `/` of sizes gives a float; use `//` "
            "or `int(...)`): " + first_lines(messages, 1),
        )
    if "Cannot access data pointer of Tensor" in messages:
        return finding("PT202", "data_ptr() cannot be called while exporting: " + first_sentence(messages))
    if any(is_kind(e, "MemoryError") for e in chain) or "can't allocate memory" in messages:
        return finding("PT502", "the trace ran out of memory: " + first_lines(messages, 1))
    if any(isinstance(e, TypeError) for e in chain) and "but got FakeTensor" in messages:
        # A tensor where torch wants Python numbers (`torch.zeros(..., n)` with `n` a tensor,
        # an RNN over a PackedSequence reading its batch sizes): numbers that come from data.
        return finding(
            "PT103",
            "a tensor's values are used where torch needs Python numbers (a size), which export does not have "
            "while tracing: " + first_lines(messages, 1),
        )
    subclass = ungraphable_subclass_spec(messages)
    if subclass is not None:
        return finding("PT202", ungraphable_subclass_message(subclass))
    leak = refused_leak(chain, workspace)
    if leak is not None:
        leak.exception = qualified_name(exc)
        return leak
    unflattened = unregistered_type(messages)
    if unflattened is not None:
        side, name = unflattened
        return unregistered_finding(finding, side, name, target, workspace)
    state = mismatch_message(messages, location, target)
    if state is not None:
        # A size the module keeps (a cache built for the configured batch) where the input's is
        # dynamic: torch's raw mismatch names neither the state nor the declared dimension.
        return finding("PT401", state)
    return finding("PT501", f"{type(exc).__name__}: {trim(str(exc))}".rstrip(": "))
