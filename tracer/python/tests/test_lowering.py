"""Deployment targets without torch: which targets a job runs, how graph nodes are placed on the
user's lines, the isolated run of a lowering (its answer, its timeout, its crash), and the
exporters' recorded messages that name the failing node."""

from __future__ import annotations

import os
import time

from pt2lsp_worker.lower_aoti import _NUMBER_OUTPUT, _TARGET
from pt2lsp_worker.lower_executorch import MEASURED_PAIRS, pairing
from pt2lsp_worker.lower_onnx import _FAILED_NODE
from pt2lsp_worker.lower_pt2 import registered_elsewhere
from pt2lsp_worker.lowering import (
    TARGETS,
    group_by_line,
    ops_phrase,
    out_of_memory,
    raise_if_out_of_memory,
    requested_targets,
    run_isolated,
)
from pt2lsp_worker.workspace import Workspace


def test_a_jobs_targets_are_its_own_and_the_files_in_the_one_order():
    job = {"targets": ["onnx", "pt2"]}
    assert requested_targets(job, ["aoti", "onnx"]) == ["pt2", "onnx", "aoti"]
    assert requested_targets({}, "executorch") == ["executorch"]
    # An unknown name is the binary's to refuse; a file's odd value is ignored.
    assert requested_targets({}, ["tflite", 3]) == []
    assert requested_targets({}, None) == []
    assert TARGETS[0] == "core-aten"


class _Node:
    def __init__(self, name: str, stack_trace: str) -> None:
        self.name = name
        self.meta = {"stack_trace": stack_trace}


def test_nodes_are_grouped_on_the_innermost_user_line_with_library_frames_related(tmp_path):
    model = tmp_path / "model.py"
    model.write_text("x = 1\n")
    library = "/venv/lib/python3.11/site-packages/timm/layers/pool.py"
    torch_file = "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py"
    first = _Node(
        "histc",
        f'  File "{model}", line 8, in forward\n    y = self.pool(x)\n'
        f'  File "{torch_file}", line 1775, in _call_impl\n'
        f'  File "{library}", line 40, in forward\n    return torch.histc(x)\n',
    )
    second = _Node("median", f'  File "{model}", line 8, in forward\n    y = self.pool(x)\n')
    orphan = _Node("full", "")
    workspace = Workspace(str(model), [str(tmp_path)])
    groups = group_by_line([first, second, orphan], workspace, lambda node: f"aten.{node.name}")
    assert [(g.place.line if g.place else None, g.ops, g.nodes) for g in groups] == [
        (8, ["aten.histc", "aten.median"], 2),
        (None, ["aten.full"], 1),
    ]
    assert [(entry.file, entry.line) for entry in groups[0].related] == [(library, 40)]
    assert ops_phrase(["aten.a", "aten.b"]) == "`aten.a` and `aten.b`"
    assert ops_phrase(["a", "b", "c", "d", "e"]) == "`a`, `b`, `c` and 2 more"


def test_an_isolated_lowering_answers_or_is_timed_out_or_crashes():
    assert run_isolated(lambda: {"findings": [1]}, 10) == {"findings": [1]}
    started = time.monotonic()
    assert run_isolated(lambda: time.sleep(30) or {}, 0.5) == {"timeout": True}
    assert time.monotonic() - started < 10
    assert run_isolated(lambda: os._exit(3), 10) == {"crashed": "exit status 3"}
    assert run_isolated(lambda: os.kill(os.getpid(), 9), 10) == {"crashed": "killed by SIGKILL"}
    raised = run_isolated(lambda: 1 / 0, 10)
    assert raised["crashed"].startswith("ZeroDivisionError"), raised
    assert run_isolated(lambda: {}, 0) == {"timeout": True}


# torch 2.15's CPU allocator under an address-space limit (recorded).
_ALLOCATOR = (
    "[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to "
    "allocate 8589934592 bytes. Error code 12 (Cannot allocate memory)"
)


def test_memory_running_out_in_a_lowering_is_out_of_memory_however_wrapped():
    assert out_of_memory(MemoryError())
    assert out_of_memory(RuntimeError(_ALLOCATOR))
    # An exporter that wraps the allocator's error in its own (ONNX's ConversionError does).
    try:
        try:
            raise RuntimeError(_ALLOCATOR)
        except RuntimeError as inner:
            raise ValueError("Failed to convert the exported program") from inner
    except ValueError as wrapped:
        assert out_of_memory(wrapped)
    assert not out_of_memory(RuntimeError("no kernel for aten::histc"))
    raise_if_out_of_memory(ValueError("unrelated"))
    try:
        raise_if_out_of_memory(RuntimeError(_ALLOCATOR))
    except MemoryError:
        pass
    else:
        raise AssertionError("the allocator's error is not raised as MemoryError")

    def allocator_fails():
        raise RuntimeError(_ALLOCATOR)

    # In the lowering's child: out of memory (PT502), not a crash of the lowering.
    assert run_isolated(allocator_fails, 10) == {"oom": True}


def test_which_executorch_pairs_with_the_torch_is_said_from_the_measured_table():
    assert ("1.5.1", "2.15") in MEASURED_PAIRS
    # executorch 1.5.1's own requirements (recorded): no torch among them.
    declared = ["flatbuffers", "torchao<0.19,>=0.18.0", 'coremltools==9.0; platform_system == "Darwin"']
    said = pairing("1.4.0", "2.15.0+cpu", declared)
    assert said.startswith("executorch 1.5.1 pairs with torch 2.15 (measured; executorch declares no torch requirement)")
    assert "pip install --no-deps executorch==1.5.1" in said
    # Not installed at all: the same advice.
    assert pairing(None, "2.15.0", None) == pairing("1.4.0", "2.15.1", declared)
    # A torch no release was measured with: the pairs that were, never a guess.
    said = pairing("1.5.1", "2.16.0", declared)
    assert "no executorch release is measured with torch 2.16" in said
    assert "measured: executorch 1.5.1 with torch 2.15" in said
    # A release that declares its torch is taken at its word.
    said = pairing("9.0.0", "2.15.0", ["torch==2.17.0", "numpy"])
    assert said.startswith("executorch 9.0.0 requires torch==2.17.0"), said
    assert pairing("9.0.0", "2.15.0", ['torch==2.17.0; extra == "gpu"']).startswith("executorch 1.5.1 pairs")


def test_the_exporters_messages_name_the_node_and_the_output():
    # torch 2.15's ConversionError for an op without an ONNX function.
    onnx = (
        "Error when translating node %kthvalue : [num_users=1] = call_function[target=torch.ops.aten.kthvalue.default]"
        "(args = (%x, 1), kwargs = {}). See the stack trace for more information."
    )
    match = _FAILED_NODE.search(onnx)
    assert (match.group(1), match.group(2)) == ("kthvalue", "torch.ops.aten.kthvalue.default")
    # torch 2.15's InductorError for a forward that returns a Python float beside a tensor.
    inductor = "AssertionError: Unexpected output types: [<class 'float'>], full result: [TensorBox(..."
    assert _NUMBER_OUTPUT.search(inductor).group(1) == "float"
    assert _TARGET.search("LoweringException: TypeError: bad\n  target: aten.as_strided.default\n").group(1) == (
        "aten.as_strided.default"
    )


class _Op:
    """Stands in for an OpOverload: its namespace, as torch names it."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace


class _Program:
    def __init__(self, *nodes) -> None:
        self.graph = type("Graph", (), {"nodes": nodes})()


def test_a_program_is_loaded_anew_only_when_it_calls_ops_torch_does_not_register():
    def call(namespace: str):
        node = _Node(namespace, "")
        node.op = "call_function"
        node.target = _Op(namespace)
        return node

    placeholder = _Node("x", "")
    placeholder.op, placeholder.target = "placeholder", "x"
    # `import torch` registers aten, prims and the higher-order ops (`cond`, `while_loop`).
    assert registered_elsewhere(_Program(placeholder, call("aten"), call("prims"), call("higher_order"))) == []
    custom, nms = call("audio"), call("torchvision")
    assert registered_elsewhere(_Program(call("aten"), custom, nms)) == [custom, nms]
