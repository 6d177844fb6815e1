"""The failure kinds of issue 32 that torch reports without the user's line, or not at all:
a tensor of the trace kept as a constant (`.data`, a differentiating transform), the module
hooks export runs once, a `torch.compile` wrapper exported. Run without torch, on graph stack
traces and modules as torch 2.15 makes them (`docs/measured/torch-2.15-failure-kinds.md`)."""

from __future__ import annotations

import functools
import os

from pt2lsp_worker.compiled import compiled_wrapper
from pt2lsp_worker.hooks import module_hooks, skipped_module_forward
from pt2lsp_worker.leaked_constants import _classified, refused_leak
from pt2lsp_worker.tensor_subclasses import ungraphable_subclass_message, ungraphable_subclass_spec
from pt2lsp_worker.workspace import Workspace

FORWARD = """import torch


def energy(r):
    return (r**2).sum()


class M(torch.nn.Module):
    def forward(self, x):
        g = torch.func.grad(energy)(x)
        self.weight.data = self.weight.data + 1
        return g * self.weight.data.clone()
"""


def _stack(path: str, *lines: int) -> str:
    """A graph node's `stack_trace` through `lines` of `path`, with torch's frames between."""
    frames = []
    for line in lines:
        frames.append(f'  File "{path}", line {line}, in forward\n    ...\n')
        frames.append('  File "/site-packages/torch/_functorch/apis.py", line 441, in wrapper\n    ...\n')
    return "".join(frames)


def _model_file(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(FORWARD)
    return str(path), Workspace(str(path), [str(tmp_path)])


def test_a_constant_used_under_a_transform_is_pt603_on_the_transforms_call(tmp_path):
    path, workspace = _model_file(tmp_path)
    # The node squares the input inside `energy` (line 5), called by `grad` on line 10.
    found = _classified(_stack(path, 10, 5), "lifted_tensor_0", workspace)
    assert (found.code, found.line) == ("PT603", 10), found
    assert "`torch.func.grad`" in found.message and "torch.autograd.grad" in found.message


def test_a_constant_made_by_data_is_pt602_on_its_line(tmp_path):
    path, workspace = _model_file(tmp_path)
    found = _classified(_stack(path, 11), "lifted_tensor_0", workspace)
    assert (found.code, found.line) == ("PT602", 11), found
    assert "torch.no_grad()" in found.message


def test_a_constant_of_another_cause_is_pt601_on_the_innermost_user_line(tmp_path):
    path, workspace = _model_file(tmp_path)
    found = _classified(_stack(path, 5), "lifted_tensor_0", workspace)
    assert (found.code, found.line) == ("PT601", 5), found
    assert "`lifted_tensor_0`" in found.message
    # No user frame: nothing to place.
    assert _classified(_stack("/site-packages/lib.py", 3), "lifted_tensor_0", workspace) is None


def test_non_stricts_refusal_without_a_graph_is_pt602_unplaced(tmp_path):
    _, workspace = _model_file(tmp_path)
    refusal = RuntimeError(
        "We found a fake tensor in the exported program constant's list. This typically means our tracing "
        "system encountered an op that we can't trace through. For the potential source, you can refer to "
        "following model attribute: lifted_tensor_0. Please file an issue on github. "
    )
    found = refused_leak([refusal], workspace)
    assert found.code == "PT602" and found.line is None and "`lifted_tensor_0`" in found.message, found
    assert refused_leak([RuntimeError("something else")], workspace) is None


class _Module:
    """Stands for an nn.Module: its hooks and its submodules."""

    def __init__(self, pre=(), post=(), children=()):
        self._forward_pre_hooks = dict(enumerate(pre))
        self._forward_hooks = dict(enumerate(post))
        self.children = list(children)

    def modules(self):
        yield self
        for child in self.children:
            yield from child.modules()


def test_the_users_hooks_are_found_on_the_model_and_its_submodules(tmp_path):
    source = tmp_path / "hooks_here.py"
    source.write_text("def count(module, args):\n    return args\n\n\ndef shift(module, args, out):\n    return out\n")
    namespace: dict = {}
    exec(compile(source.read_text(), str(source), "exec"), namespace)  # noqa: S102 - the user's hooks, as imported
    count, shift = namespace["count"], namespace["shift"]
    library = os.path.join  # a function outside the user's files
    model = _Module(pre=[count], children=[_Module(post=[functools.partial(shift), library]), _Module(pre=[count])])
    workspace = Workspace(str(source), [str(tmp_path)])
    hooks = module_hooks(model, workspace.contains)
    assert [(hook.name, hook.kind, hook.place.line) for hook in hooks] == [
        ("count", "forward pre-hook", 1),
        ("shift", "forward hook", 5),
    ]


def test_strict_exports_stop_in_torchs_module_wrapper_is_told_apart():
    message = (
        "Attempted to inline function marked as skipped\n  Explanation: Dynamo developers have intentionally "
        "marked that the function `ModuleToTrace.forward` should not be traced."
    )
    assert skipped_module_forward(message)
    assert not skipped_module_forward("Attempted to inline function marked as skipped: `zlib.crc32`")


def test_a_compile_wrapper_is_told_apart_from_a_module():
    class OptimizedModule:
        _orig_mod = object()

    assert compiled_wrapper(OptimizedModule())
    assert not compiled_wrapper(_Module())


def test_a_dtensor_built_in_forward_is_said_in_the_users_terms():
    # str(exc) of `DTensor.from_local(x, mesh, [Replicate()])` in forward (torch 2.15, both modes).
    message = (
        "Expected all pytree.tree_leaves of (args, kwargs) to be graphable types, but found non-fx-graphable "
        "type <class 'torch.distributed.tensor._dtensor_spec.DTensorSpec'>. If this type is meant to be constant, "
        "mark it as via pytree.register_constant; otherwise, register it as a pytree."
    )
    spec = ungraphable_subclass_spec(message)
    assert spec == "torch.distributed.tensor._dtensor_spec.DTensorSpec"
    said = ungraphable_subclass_message(spec)
    assert "`DTensor.from_local`" in said and "`DTensorSpec`" in said and "DTensor parameters or inputs" in said
    # A user's own class that is not a tensor's spec is the pytree rule's (PT404), not this.
    assert ungraphable_subclass_spec("found non-fx-graphable type <class 'mymodels.Config'>") is None
