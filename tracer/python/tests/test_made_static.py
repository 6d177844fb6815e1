"""Which declared dimensions the PT406 check looks at: `Dim.AUTO` entries of `dynamic_shapes`,
by parameter and index, in the forms users write, never `Dim.DYNAMIC` or a named `Dim`; and the
`ShapeVar`s of a `@dynamic_spec` spec, with the recorded runtime assert that narrowed one."""

from __future__ import annotations

import enum

from pt2lsp_worker.made_static import _asserting_site, declared_auto, declared_shape_vars, is_auto


class _DimHintType(enum.Enum):
    AUTO = 1
    DYNAMIC = 2


class _DimHint:  # torch.export.dynamic_shapes._DimHint, as far as the check reads it
    def __init__(self, kind: _DimHintType) -> None:
        self.type = kind


AUTO = _DimHint(_DimHintType.AUTO)
DYNAMIC = _DimHint(_DimHintType.DYNAMIC)


class Dim:  # a named `Dim`
    pass


def test_auto_is_told_apart_from_dynamic_and_named_dims():
    assert is_auto(AUTO)
    assert not is_auto(DYNAMIC)
    assert not is_auto(Dim())
    assert not is_auto(None)


def test_auto_dimensions_by_parameter_and_index():
    spec = {"x": {0: AUTO, 1: Dim()}, "y": (None, AUTO), "z": None}
    assert declared_auto(spec, ["x", "y", "z"]) == [("x", 0), ("y", 1)]
    # A tuple spec follows `forward`'s parameters.
    assert declared_auto(({0: DYNAMIC}, [AUTO, None]), ["x", "y"]) == [("y", 0)]
    assert declared_auto(None, ["x"]) == []


class ShapeVar:  # torch.fx.experimental.dynamic_spec.ShapeVar, as far as the check reads it
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


def test_shape_vars_by_parameter_index_and_name():
    spec = {"x": TensorSpec([ShapeVar("batch"), None]), "y": TensorSpec([4, ShapeVar("time")])}
    expected = [("x", 0, "batch"), ("y", 1, "time")]
    assert declared_shape_vars(spec) == expected
    assert declared_shape_vars(ShapesSpec(ParamsSpec(spec))) == expected
    assert declared_shape_vars(None) == []


def test_the_narrowing_assert_is_found_by_its_symbol():
    guards = [
        {"expr": "u1 >= 0", "line": 3},
        {"expr": "Eq(u10, 8)", "line": 5},
        {"expr": "Eq(4*u1, 32)", "line": 9},
    ]
    site = _asserting_site(guards, ["u1"], lambda event: event["line"])
    assert site == 9
    assert _asserting_site(guards, ["u2"], lambda event: event["line"]) is None
