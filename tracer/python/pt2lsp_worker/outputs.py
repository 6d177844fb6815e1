"""Comparing the outputs of two runs: the exported program's against the eager model's."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from .protocol import MESSAGE_LIMIT

# Tolerances by dtype (rtol, atol): float16 and bfloat16 keep about three significant digits.
TOLERANCES = {
    "float16": (1e-2, 1e-3),
    "bfloat16": (2e-2, 1e-2),
    "float32": (1e-4, 1e-5),
    "float64": (1e-7, 1e-9),
}


def tolerance_of(dtype) -> tuple[float, float]:
    """(rtol, atol) for outputs of `dtype`."""
    return TOLERANCES.get(str(dtype).removeprefix("torch."), (1e-4, 1e-5))


@dataclasses.dataclass
class Comparison:
    # What differs, in words; None when the outputs agree.
    detail: str | None = None
    # The largest absolute difference among the floating outputs compared (NaN against NaN is
    # no difference; JSON has no infinity, so an infinite one is left out).
    max_abs_diff: float | None = None

    @property
    def matches(self) -> bool:
        return self.detail is None


def compare_outputs(
    expected,
    actual,
    tolerance: Callable[[object], tuple[float, float]] = tolerance_of,
    shape_only: frozenset[int] = frozenset(),
) -> Comparison:
    """Whether two output pytrees agree: tensors by shape, dtype and `torch.allclose` under
    `tolerance(dtype)` (exact for integers and booleans), everything else with ==; the leaves at
    `shape_only` (uninitialised memory) by shape and dtype alone."""
    import torch
    from torch.utils import _pytree as pytree

    expected_leaves, _ = pytree.tree_flatten(expected)
    actual_leaves, _ = pytree.tree_flatten(actual)
    if len(expected_leaves) != len(actual_leaves):
        return Comparison(f"eager returns {len(expected_leaves)} values, the program {len(actual_leaves)}")
    largest = None
    for index, (want, got) in enumerate(zip(expected_leaves, actual_leaves, strict=False)):
        if isinstance(want, torch.Tensor) and isinstance(got, torch.Tensor):
            if want.shape != got.shape:
                return Comparison(f"output {index}: shape {tuple(got.shape)}, eager {tuple(want.shape)}", largest)
            if want.dtype != got.dtype:
                return Comparison(f"output {index}: dtype {got.dtype}, eager {want.dtype}", largest)
            if index in shape_only:
                continue
            if want.is_floating_point() or want.is_complex():
                rtol, atol = tolerance(want.dtype)
                if want.numel():
                    diff = float(torch.nan_to_num((want.detach() - got.detach()).abs(), nan=0.0).max())
                    if diff == diff and diff != float("inf"):
                        largest = diff if largest is None else max(largest, diff)
                if not torch.allclose(want, got, rtol=rtol, atol=atol, equal_nan=True):
                    by = f" by up to {largest:.3g}" if largest is not None else ""
                    return Comparison(f"output {index} differs from eager{by} (rtol {rtol:g}, atol {atol:g})", largest)
            elif not torch.equal(want, got):
                return Comparison(f"output {index} differs from eager", largest)
        elif isinstance(want, torch.Tensor) or isinstance(got, torch.Tensor):
            return Comparison(f"output {index}: {type(got).__name__}, eager {type(want).__name__}", largest)
        else:
            try:
                same = bool(want == got)
            except Exception:  # noqa: BLE001 - an output type without a usable ==
                same = want is got
            if not same:
                return Comparison(f"output {index}: {got!r}, eager {want!r}"[:MESSAGE_LIMIT], largest)
    return Comparison(None, largest if largest is not None else 0.0)
