"""The unbacked symbols a data-dependent error names, told by the `@dynamic_spec` declaration
they stand for; read from the spec torch keeps on `forward` and the partial graph's inputs."""

from __future__ import annotations

from types import SimpleNamespace

from pt2lsp_worker.shape_vars import declared_symbols


class ShapeVar:
    def __init__(self, name: str) -> None:
        self.name = name


class TensorSpec(list):
    pass


class ParamsSpec:
    def __init__(self, named: dict) -> None:
        self._named_args = named


class ShapesSpec:
    def __init__(self, params: ParamsSpec) -> None:
        self._params = params


GRAPH = 'def forward(self, arg0_1: "f32[4, 4]", arg1_1: "f32[u0, 4]", arg2_1: "f32[3, u1]"):\n    pass\n'


def _target(spec, dynamic_shapes=None):
    def forward(x, y):
        return x

    forward._dynamic_spec = spec
    model = SimpleNamespace(forward=forward)
    return SimpleNamespace(model=model, dynamic_shapes=dynamic_shapes, args=(1, 2), kwargs=None)


def test_each_unbacked_input_dimension_is_named_by_its_shape_var():
    spec = ShapesSpec(ParamsSpec({"x": TensorSpec([ShapeVar("batch"), None]), "y": TensorSpec([None, ShapeVar("tokens")])}))
    named = declared_symbols(_target(spec), GRAPH)
    assert named == {
        "u0": 'dimension 0 of `x`, `ShapeVar("batch")` of `@dynamic_spec` (an unbacked size)',
        "u1": 'dimension 1 of `y`, `ShapeVar("tokens")` of `@dynamic_spec` (an unbacked size)',
    }


def test_a_spec_given_as_dynamic_shapes_counts_and_no_spec_names_nothing():
    spec = ShapesSpec(ParamsSpec({"x": TensorSpec([ShapeVar("batch"), None])}))
    assert set(declared_symbols(_target(None, dynamic_shapes=spec), GRAPH)) == {"u0"}
    assert declared_symbols(_target(None), GRAPH) == {}
    assert declared_symbols(_target(spec), "no graph") == {}
