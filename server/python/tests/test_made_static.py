"""Which declared dimensions the PT406 check looks at: `Dim.AUTO` entries of `dynamic_shapes`,
by parameter and index, in the forms users write; never `Dim.DYNAMIC` or a named `Dim`."""

from __future__ import annotations

import enum

from pt2lsp_worker.made_static import declared_auto, is_auto


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
