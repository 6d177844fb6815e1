"""The worker's readers of torch's messages, on exception texts recorded from torch 2.15.

`recorded.json` holds `str(exc)` of real `torch.export.export` failures (recorded with
torch 2.15 CPU: a dynamic dim specialized to a constant, a reshape that forces the batch to be
even, a guard on the size of `nonzero`, a guard on `.item()`, a custom op without a fake
kernel). The tests run without torch: the worker imports torch only inside its functions.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pt2lsp_worker.classify import classify
from pt2lsp_worker.constraints import in_user_terms, parse_constraint_violation, parse_suggested_fixes
from pt2lsp_worker.data_dependent import (
    data_dependent_code,
    data_dependent_message,
    symbol_origin,
    symbol_producer,
    symbol_source,
)
from pt2lsp_worker.entrypoint import Target
from pt2lsp_worker.examples import example_size_conflict, example_size_specializations
from pt2lsp_worker.fake_kernels import missing_fake_kernel, normalize_op
from pt2lsp_worker.findings import SuggestedFix
from pt2lsp_worker.protocol import MESSAGE_LIMIT, RULES
from pt2lsp_worker.pytree_types import unregistered_type
from pt2lsp_worker.workspace import Workspace

HERE = Path(__file__).resolve().parent
RECORDED = json.loads((HERE / "recorded.json").read_text())


def text(name: str) -> str:
    return RECORDED[name]["text"]


class Guard(Exception):
    """Stands for torch's GuardOnDataDependentSymNode: `cond` is absent, as in strict export."""


def test_a_dim_specialized_to_a_constant_suggests_the_constant_and_names_the_dim():
    message, fixes, dims = parse_constraint_violation(text("constraint_spec"))
    assert fixes == [SuggestedFix("batch", "batch = 8", "constant", value=8)]
    assert dims == {"?batch": "batch"}
    assert message.startswith("Constraints violated (batch)!")
    assert "TORCH_LOGS" not in message
    assert "mark_dynamic" not in message and "Dim.DYNAMIC" not in message
    # The advice is dropped whole: `Dim.STATIC` inside its sentence does not end it.
    assert "STATIC" not in message and "Dim.AUTO" not in message, message
    assert "suggested fix: batch = 8 (which makes `batch` static)" in message


def test_a_guard_the_range_does_not_satisfy_names_the_input_dimension():
    message, fixes, dims = parse_constraint_violation(text("constraint_mul"))
    assert dims == {"L['x'].size()[0]": "batch"}
    assert "(and " in message and "more)" in message
    # In the user's names: the guard on `batch`, not on `L['x'].size()[0]`.
    assert "satisfies the guard ((4*batch) % 8) == 0" in message
    assert "L['x']" not in message.split("suggested fix")[0]
    assert len(message) <= MESSAGE_LIMIT


def test_suggested_fixes_of_every_kind():
    block = (
        "Constraints violated (h, w)!\n"
        "Suggested fixes:\n"
        "  h = Dim('h', min=2, max=1024)\n"
        "  w = 2*_w\n"
        "  c = 3\n"
        "  d = h\n"
        "\n"
        "The error above occurred when calling torch.export.export."
    )
    fixes = parse_suggested_fixes(block)
    assert [fix.kind for fix in fixes] == ["range", "derived", "constant", "equal"]
    assert (fixes[0].min, fixes[0].max) == (2, 1024)
    assert (fixes[1].expr, fixes[1].root) == ("2*_w", "_w")
    assert fixes[2].value == 3
    assert fixes[3].to == "h"
    assert parse_suggested_fixes("no block here") == []


def test_an_unbounded_range_suggestion_keeps_no_bound():
    fixes = parse_suggested_fixes("Suggested fixes:\n  batch = Dim('batch', min=2, max=int_oo)\n")
    assert fixes[0].kind == "range"
    assert fixes[0].min == 2 and fixes[0].max is None
    assert fixes[0].to_json() == {"dim": "batch", "text": "batch = Dim('batch', min=2, max=int_oo)", "kind": "range", "min": 2}


def test_data_dependent_guards_are_told_apart_by_the_graph():
    graph = (
        'def forward(self, arg0_1: "f32[6]"):\n'
        '    nonzero: "i64[u0, 1]" = torch.ops.aten.nonzero.default(arg0_1);  arg0_1 = None\n'
        '    sym_size_int: "Sym(u0)" = torch.ops.aten.sym_size.int(nonzero, 0);  nonzero = None\n'
        '    gt: "Sym(u0 > 3)" = sym_size_int > 3;  sym_size_int = gt = None\n'
    )
    assert symbol_origin("u0", graph) == "size"
    scalar = (
        '    sum_1: "f32[]" = torch.ops.aten.sum.default(arg0_1);  arg0_1 = None\n'
        '    item: "Sym(u3)" = torch.ops.aten.item.default(sum_1);  sum_1 = None\n'
    )
    assert symbol_origin("u3", scalar) == "scalar"
    boolean = (
        '    gt: "b8[]" = torch.ops.aten.gt.Scalar(arg0_1, 0);  arg0_1 = None\n'
        '    item: "Sym(u1)" = torch.ops.aten.item.default(gt);  gt = None\n'
    )
    assert symbol_origin("u1", boolean) == "bool"
    assert symbol_origin("u9", graph) is None


def test_a_guard_on_a_size_like_symbol_is_a_data_dependent_shape_without_a_graph():
    guard = Guard(text("data_dependent_size"))
    workspace = Workspace("/nowhere/model.py", ["/nowhere"])
    assert data_dependent_code(guard, [guard], workspace, "") == "PT103"
    message = data_dependent_message(guard, "PT103")
    assert message.startswith("Could not guard on data-dependent expression u0 > 3: ")
    assert "unhinted" not in message and "Size-like" not in message
    assert "torch._check" in message


def test_a_guard_on_a_float_from_item_is_a_data_dependent_scalar():
    guard = Guard(text("data_dependent_item"))
    workspace = Workspace("/nowhere/model.py", ["/nowhere"])
    assert data_dependent_code(guard, [guard], workspace, "") == "PT102"


def test_a_missing_fake_kernel_names_the_operator():
    error = RuntimeError(text("missing_fake"))
    assert missing_fake_kernel([error], text("missing_fake")) == "rec::nofake"
    assert normalize_op("rec.nofake.default") == "rec::nofake"
    assert normalize_op("rec::nofake.overload") == "rec::nofake"


def test_every_code_the_worker_names_is_in_its_rule_list():
    source = "".join(path.read_text() for path in (HERE.parent / "pt2lsp_worker").glob("*.py"))
    named = set(re.findall(r'"(PT\d{3})"', source))
    assert named == set(RULES), named ^ set(RULES)


class UserError(Exception):
    """Stands for torch's UserError: `error_type.name` says which."""

    def __init__(self, message: str, kind: str) -> None:
        super().__init__(message)
        self.error_type = type("ErrorType", (), {"name": kind})()


class Dim:
    """Stands for torch.export.Dim: export names a dimension by `__name__`."""

    def __init__(self, name: str) -> None:
        self.__name__ = name


class TwoInputs:
    def forward(self, x, y):
        return x, y


def _entry(tmp_path: Path, source: str) -> tuple[Workspace, Target]:
    path = tmp_path / "model.py"
    path.write_text(source)
    workspace = Workspace(str(path), [str(tmp_path)])
    target = Target()
    target.model = TwoInputs()
    target.model_binding = (str(path), "model")
    target.args_binding = (str(path), "example_args")
    target.spec_binding = (str(path), "dynamic_shapes")
    return workspace, target


def test_a_dim_specialized_to_0_or_1_is_the_example_size_and_nothing_else_is():
    assert example_size_specializations(text("constraint_size_one")) == {"batch": 1}
    assert example_size_specializations(text("constraint_size_zero")) == {"batch": 0}
    # A constant the model's own code forces, or a guard on a range, stays a PT401.
    assert example_size_specializations(text("constraint_spec")) == {}
    assert example_size_specializations(text("constraint_mul")) == {}


def test_a_batch_of_one_is_pt405_on_its_example_with_torchs_constant_kept_for_the_fix(tmp_path):
    workspace, target = _entry(
        tmp_path,
        "model = M()\n"
        "example_args = (\n"
        "    torch.randn(4),\n"
        "    torch.randn(1, 3),\n"
        ")\n"
        'dynamic_shapes = {"x": None, "y": {0: Dim("batch")}}\n',
    )
    target.args = (object(), object())
    target.dynamic_shapes = {"x": None, "y": {0: Dim("batch")}}
    found = classify(UserError(text("constraint_size_one"), "CONSTRAINT_VIOLATION"), target, workspace, {})
    assert found.code == "PT405"
    assert (found.file, found.line) == (str(tmp_path / "model.py"), 4)
    assert "`batch`" in found.message and "2 or more" in found.message
    assert found.fixes == [SuggestedFix("batch", "batch = 1", "constant", value=1)]
    # A constant other than 0 or 1 is the model's doing: PT401 on dynamic_shapes, as before.
    found = classify(UserError(text("constraint_spec"), "CONSTRAINT_VIOLATION"), target, workspace, {})
    assert found.code == "PT401"


def test_a_size_one_keyword_example_is_pt405_on_its_key_of_example_kwargs(tmp_path):
    workspace, target = _entry(
        tmp_path,
        "model = M()\nexample_args = (torch.randn(4),)\nexample_kwargs = {\n    'y': torch.randn(1, 3),\n}\n",
    )
    target.kwargs_binding = (str(tmp_path / "model.py"), "example_kwargs")
    target.args = (object(),)
    target.kwargs = {"y": object()}
    target.dynamic_shapes = {"x": None, "y": {0: Dim("batch")}}
    found = classify(UserError(text("constraint_size_zero"), "CONSTRAINT_VIOLATION"), target, workspace, {})
    assert (found.code, found.line) == ("PT405", 4)


def test_a_type_pytree_cannot_flatten_is_named_with_its_side():
    assert unregistered_type(text("unregistered_input")) == (
        "input",
        "pt147400_unregistered_dataclass.MyStaticInput",
    )
    assert unregistered_type(text("unregistered_output")) == (
        "output",
        "pt147400_unregistered_dataclass.MyStaticInput",
    )
    assert unregistered_type(text("missing_fake")) is None


class MyStaticInput:
    pass


def test_an_unregistered_example_input_is_pt404_on_its_element_of_example_args(tmp_path):
    workspace, target = _entry(tmp_path, "model = M()\nexample_args = (\n    x,\n    MyStaticInput(1, 2),\n)\n")
    target.args = (1.0, [MyStaticInput()])
    message = text("unregistered_input").replace("pt147400_unregistered_dataclass", __name__)
    found = classify(ValueError(message), target, workspace, {})
    assert (found.code, found.line) == ("PT404", 4)
    assert "register_dataclass(MyStaticInput)" in found.message


def test_an_example_size_the_dim_rejects_is_a_conflict_of_the_example():
    message, key = example_size_conflict("16 not in range [2, 8]")
    assert key is None and "[2, 8]" in message
    hint = (
        "Found the following conflicts between user-specified ranges and inferred ranges from model tracing: "
        "- Received user-specified dim hint Dim.DYNAMIC(min=None, max=None), but export 0/1 specialized due to "
        "hint of 1 for dimension inputs['x'].shape[1]."
    )
    message, key = example_size_conflict(hint)
    assert key == "x" and "size 1" in message
    assert example_size_conflict(text("constraint_mul")) is None


def test_a_guard_is_written_in_the_users_names():
    names = {"s27": "seq", "s3": "batch", "L['x'].size()[1]": "seq"}
    assert in_user_terms("Ne(16*s27, 32)", names) == "Ne(16*seq, 32)"
    assert in_user_terms("Eq(Mod(960*s3, 32*s27), 0)", names) == "Eq(Mod(960*batch, 32*seq), 0)"
    assert in_user_terms("s270 + s2", names) == "s270 + s2"
    assert in_user_terms("(L['x'].size()[1] // 2) != 1", names) == "(seq // 2) != 1"


def test_an_unbacked_symbol_is_named_with_the_line_that_made_it():
    # As torch 2.15 attaches it to the error of `if idx.shape[0] > 3` after `idx = x.nonzero()`.
    graph = (
        'def forward(self, arg0_1: "f32[8]"):\n'
        "    # File: /p/models/gate.py:4 in forward, code: idx = x.nonzero()\n"
        '    nonzero: "i64[u0, 1]" = torch.ops.aten.nonzero.default(arg0_1);  arg0_1 = None\n'
        "    \n"
        "    # File: /p/models/gate.py:6 in forward, code: if n > 3:\n"
        '    sym_size_int: "Sym(u0)" = torch.ops.aten.sym_size.int(nonzero, 0);  nonzero = None\n'
        '    gt: "Sym(u0 > 3)" = sym_size_int > 3;  sym_size_int = gt = None\n'
    )
    assert symbol_source("u0", graph) == ("nonzero", "/p/models/gate.py", 4, "idx = x.nonzero()")
    guard = Guard(text("data_dependent_size"))
    message = data_dependent_message(guard, "PT103", graph)
    assert "u0 is a size of what `nonzero` returns at gate.py:4 (`idx = x.nonzero()`), which depends" in message, message

    class Elsewhere:
        def contains(self, filename):
            return False

    # A line in a library the user cannot edit is left out; the op still names the symbol.
    message = data_dependent_message(guard, "PT103", graph, Elsewhere())
    assert "u0 is a size of what `nonzero` returns, which depends on the data" in message, message


def test_a_truth_value_is_named_where_the_tensor_is_tested_not_where_torch_notes_the_node():
    # torch 2.15's partial graph for `h = normalize(self.proj(x))` in net.py, whose helper does
    # `if h.mean() > 0:` at helpers.py:3: every node is noted at the call in `forward`.
    graph = (
        'def forward(self, arg0_1: "f32[4, 4]", arg1_1: "f32[4]", arg2_1: "f32[2, 4]"):\n'
        "    # File: /p/net.py:8 in forward, code: h = normalize(self.proj(x))\n"
        '    mean: "f32[]" = torch.ops.aten.mean.default(linear);  linear = None\n'
        '    gt: "b8[]" = torch.ops.aten.gt.Scalar(mean, 0);  mean = None\n'
        '    ne: "b8[]" = torch.ops.aten.ne.Scalar(gt, 0);  gt = None\n'
        '    item: "Sym(Eq(u0, 1))" = torch.ops.aten.item.default(ne);  ne = item = None\n'
    )
    guard = Guard("Could not guard on data-dependent expression Eq(u0, 1) (unhinted: Eq(u0, 1)).")
    tested = ("/p/helpers.py", 3)
    message = data_dependent_message(guard, "PT101", graph, source_line="    if h.mean() > 0:\n", tested_at=tested)
    assert "u0 is the truth value of a tensor at helpers.py:3 (`if h.mean() > 0:`)" in message, message
    assert "net.py" not in message, message


def test_an_unbacked_symbol_is_named_by_the_op_that_made_it():
    graph = (
        'def forward(self, arg0_1: "f32[6]"):\n'
        '    nonzero: "i64[u0, 1]" = torch.ops.aten.nonzero.default(arg0_1);  arg0_1 = None\n'
        '    sym_size_int: "Sym(u0)" = torch.ops.aten.sym_size.int(nonzero, 0);  nonzero = None\n'
    )
    assert symbol_producer("u0", graph) == "nonzero"
    assert symbol_producer("u9", graph) is None
    guard = Guard(text("data_dependent_size"))
    message = data_dependent_message(guard, "PT103", graph)
    assert "where u0 is a size of what `nonzero` returns, which depends on the data" in message, message
    # Without a graph (strict export), the message is torch's head alone.
    assert "where" not in data_dependent_message(guard, "PT103")


def test_a_tensor_where_torch_wants_sizes_is_pt103(tmp_path):
    workspace, target = _entry(tmp_path, "model = M()\nexample_args = (x,)\n")
    message = (
        "zeros(): argument 'size' failed to unpack the object at pos 2 with error "
        '"type must be tuple of ints,but got FakeTensor"'
    )
    found = classify(TypeError(message), target, workspace, {})
    assert found.code == "PT103"
    assert "Python numbers" in found.message
    assert classify(TypeError("unsupported operand"), target, workspace, {}).code == "PT501"


def test_numpy_on_a_dynamic_size_is_pt201(tmp_path):
    workspace, target = _entry(tmp_path, "model = M()\nexample_args = (x,)\n")
    message = "loop of ufunc does not support argument 0 of type SymInt which has no callable log method"
    found = classify(TypeError(message), target, workspace, {})
    assert found.code == "PT201"
    assert "SymInt" in found.message and "dynamic dimension" in found.message


def test_tensors_on_two_devices_are_pt604(tmp_path):
    workspace, target = _entry(tmp_path, "model = M()\nexample_args = (x,)\n")

    class FakeTensorDeviceMismatchError(RuntimeError):
        pass

    message = "Expected all tensors to be on the same device, but found at least two devices, cpu and cuda:0!"
    found = classify(FakeTensorDeviceMismatchError(message), target, workspace, {})
    assert found.code == "PT604"
    assert "cpu and cuda:0" in found.message
    # An op that checks its operands' devices itself raises a plain RuntimeError.
    found = classify(RuntimeError("Tensor on device cuda:0 is not on the expected device cpu!"), target, workspace, {})
    assert found.code == "PT604"


def test_a_float_where_torch_takes_sizes_is_pt605(tmp_path):
    workspace, target = _entry(tmp_path, "model = M()\nexample_args = (x,)\n")
    message = (
        "view(): argument 'size' failed to unpack the object at pos 3 with error \"type must be tuple of ints,but got float\""
    )
    found = classify(TypeError(message), target, workspace, {})
    assert found.code == "PT605"
    assert "`//`" in found.message and "pos 3" in found.message


def test_a_tensor_where_torch_takes_sizes_stays_pt103(tmp_path):
    workspace, target = _entry(tmp_path, "model = M()\nexample_args = (x,)\n")
    message = (
        "zeros(): argument 'size' failed to unpack the object at pos 1 with error "
        '"type must be tuple of ints,but got FakeTensor"'
    )
    found = classify(TypeError(message), target, workspace, {})
    assert found.code == "PT103"
