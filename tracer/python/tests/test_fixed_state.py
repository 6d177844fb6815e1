"""Fixed-size state against a dynamic dimension: torch's raw size mismatches read (the texts torch
2.15 printed for fixtures/rules/PT401/cache_sized_from_config_example_differs.py and its kin, in
both modes), the state found on the failing line of a model written to a file, and the messages;
no torch needed."""

from __future__ import annotations

import importlib.util
import textwrap

import pytest

from pt2lsp_worker.entrypoint import Target
from pt2lsp_worker.findings import Finding, Location, SuggestedFix
from pt2lsp_worker.fixed_state import built_at, mismatch_message, name_fixed_state, size_mismatch, state_on_line

# Recorded from torch 2.15: an addition, `torch.cat` and an assignment into a slice between a
# buffer of batch 4 and an input whose batch `Dim("batch")` has the example size 2.
NON_STRICT_ADD = "The size of tensor a (s77) must match the size of tensor b (4) at non-singleton dimension 0)"
STRICT_ADD = (
    "Dynamo failed to run FX node with fake tensors: call_function <built-in function add>(*(FakeTensor(..., "
    "size=(s6, 16, 8), grad_fn=<UnsafeViewBackward0>), FakeTensor(..., size=(4, 16, 8))), **{}): got "
    "RuntimeError('The size of tensor a (s6: hint = 2) must match the size of tensor b (4) at non-singleton dimension 0)')"
)
NON_STRICT_CAT = (
    "Sizes of tensors must match except in dimension 1. Expected 4 in dimension 0 but got s77 for tensor number 1 in the list"
)
STRICT_CAT = (
    "got RuntimeError('Sizes of tensors must match except in dimension 1. Expected 4 in dimension 0 but got s6 for "
    "tensor number 1 in the list')"
)
NON_STRICT_SETITEM = "expand: attempting to expand a dimension of length s77 -> 4!"


def test_a_broadcast_against_a_fixed_size_is_read_in_both_modes():
    mismatch = size_mismatch(NON_STRICT_ADD)
    assert (mismatch.size, mismatch.symbol, mismatch.hint, mismatch.dim) == (4, "s77", None, 0)
    mismatch = size_mismatch(STRICT_ADD)
    assert (mismatch.size, mismatch.symbol, mismatch.hint, mismatch.dim) == (4, "s6", 2, 0)
    # The sentence as torch says it outside Dynamo, without the hint.
    assert mismatch.sentence == "The size of tensor a (s6) must match the size of tensor b (4) at non-singleton dimension 0"


def test_a_concatenation_and_a_slice_assignment_are_read():
    for text, symbol, hint in ((NON_STRICT_CAT, "s77", None), (STRICT_CAT, "s6", None)):
        mismatch = size_mismatch(text)
        assert (mismatch.size, mismatch.symbol, mismatch.hint, mismatch.dim) == (4, symbol, hint, 0)
        assert mismatch.sentence.endswith("for tensor number 1 in the list")
    mismatch = size_mismatch(NON_STRICT_SETITEM)
    assert (mismatch.size, mismatch.symbol, mismatch.dim) == (4, "s77", None)


@pytest.mark.parametrize(
    "text",
    [
        # Two numbers: a shape error of the model, no dynamic dimension in it.
        "The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 1",
        # A size read from data is no input's dimension.
        "The size of tensor a (u0) must match the size of tensor b (4) at non-singleton dimension 0",
        # Two symbols, or an expression of one: no fixed size.
        "The size of tensor a (s77) must match the size of tensor b (s53) at non-singleton dimension 0",
        "The size of tensor a (2*s77) must match the size of tensor b (4) at non-singleton dimension 0",
        "Constraints violated (batch)!",
    ],
)
def test_other_mismatches_are_not_about_fixed_state(text):
    assert size_mismatch(text) is None


MODEL = textwrap.dedent(
    """\
    class Tensor:
        def __init__(self, *shape):
            self.shape = shape
            self.ndim = len(shape)

        def dim(self):
            return len(self.shape)


    class Cache:
        def __init__(self, size):
            self._buffers = {}
            self._parameters = {}
            self.register_buffer("k", Tensor(size, 16, 8))

        def register_buffer(self, name, value):
            self._buffers[name] = value
            setattr(self, name, value)


    class Attention:
        def __init__(self, size):
            self._buffers = {}
            self._parameters = {}
            self.cache = Cache(size)
            self.scale = Tensor(8, size)

        def modules(self):
            return [self, self.cache]

        def forward(self, x):
            keys = concatenate(
                [self.cache.k, x],
            )
            return keys * self.scale

        def step(self, x):
            cached = self.cache.k
            return x + cached


    def concatenate(items):
        return items
    """
)
# The lines of MODEL the tests name.
REGISTERED, ASSIGNED, CALL, CALL_ITEMS, SCALED, ALIASED = 14, 26, 32, 33, 35, 39


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(MODEL)
    spec = importlib.util.spec_from_file_location("fixed_state_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(path), module


class Dim:
    def __init__(self, name: str) -> None:
        self.__name__ = name


def target_of(module, batch: int) -> Target:
    target = Target()
    target.model = module.Attention(4)
    target.args = (module.Tensor(batch, 4, 8),)
    target.dynamic_shapes = {"x": {0: Dim("batch")}}
    return target


def test_the_state_read_on_the_line_is_named_with_where_it_was_built(model_file):
    path, module = model_file
    model = module.Attention(4)
    # On any line of the statement, through a submodule.
    for line in (CALL, CALL_ITEMS):
        state = state_on_line(model, path, line, 4, 0)
        assert (state.expression, state.kind, state.shape, state.dim) == ("self.cache.k", "buffer", (4, 16, 8), 0)
        assert state.built == Location(path, REGISTERED)
        assert state.described() == f"`self.cache.k` (size 4 at dim 0, built at model.py:{REGISTERED})"
    # A plain tensor attribute, at the dimension that has the size.
    state = state_on_line(model, path, SCALED, 4)
    assert (state.expression, state.kind, state.dim, state.built) == (
        "self.scale",
        "tensor attribute",
        1,
        Location(path, ASSIGNED),
    )


def test_a_state_read_through_a_local_name_is_named(model_file):
    path, module = model_file
    state = state_on_line(module.Attention(4), path, ALIASED, 4)
    assert (state.expression, state.built) == ("self.cache.k", Location(path, REGISTERED))


def test_no_state_of_another_size_nor_outside_a_method(model_file):
    path, module = model_file
    model = module.Attention(4)
    assert state_on_line(model, path, CALL, 5) is None
    assert state_on_line(model, path, len(MODEL.splitlines()), 4) is None
    # A model whose modules are not of the line's class.
    assert state_on_line(module.Cache(4), path, CALL, 4) is None


def test_built_at_looks_in_init_first(model_file):
    path, module = model_file
    assert built_at(module.Cache, "k") == Location(path, REGISTERED)
    assert built_at(module.Cache, "missing") is None


def test_a_raw_mismatch_on_state_names_the_state_and_the_declared_dimension(model_file):
    path, module = model_file
    message = mismatch_message(NON_STRICT_CAT, Location(path, CALL), target_of(module, 2))
    assert message.startswith(
        f"`self.cache.k` (size 4 at dim 0, built at model.py:{REGISTERED}) meets dynamic dimension `batch` here"
    )
    assert "Expected 4 in dimension 0 but got s77" in message
    assert "the example's `batch` is 2" in message
    # Strict export prints the example's size: a Dim whose example has another size is not it.
    assert "dynamic dimension `batch`" not in mismatch_message(
        STRICT_ADD.replace("hint = 2", "hint = 3"), Location(path, CALL), target_of(module, 2)
    )
    # Nothing on a line that reads no state of that size, nor without a place.
    assert (
        mismatch_message(NON_STRICT_CAT.replace("Expected 4", "Expected 6"), Location(path, CALL), target_of(module, 2)) is None
    )
    assert mismatch_message(NON_STRICT_CAT, None, target_of(module, 2)) is None


def test_a_constraint_violation_to_the_states_size_names_the_state(model_file):
    path, module = model_file
    fix = SuggestedFix("batch", "batch = 4", "constant", value=4)
    said = "Constraints violated: this code adds the guard batch == 4 on dynamic dimension `batch`"
    finding = Finding("PT401", said, file=path, line=CALL, fixes=[fix])
    name_fixed_state(finding, target_of(module, 4))
    assert finding.message.startswith(
        f"`self.cache.k` (size 4 at dim 0, built at model.py:{REGISTERED}) is read here with dynamic dimension `batch`"
    )
    assert finding.message.endswith(said)
    once = finding.message
    name_fixed_state(finding, target_of(module, 4))
    assert finding.message == once
    # A constant no state on the line has, or another rule, is left as torch said it.
    other = Finding("PT401", said, file=path, line=CALL, fixes=[SuggestedFix("batch", "batch = 3", "constant", value=3)])
    name_fixed_state(other, target_of(module, 4))
    assert other.message == said
    guard = Finding("PT101", said, file=path, line=CALL, fixes=[fix])
    name_fixed_state(guard, target_of(module, 4))
    assert guard.message == said
