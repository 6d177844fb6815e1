"""The dimensions torch 2.15's `@dynamic_spec` declares, by the unbacked symbols export gives
them, so that a data-dependent error names them as the user did (`u0` is `batch`).

The spec is read where torch keeps it: the `ShapesSpec` the decorator stores on `forward`
(`_dynamic_spec`), or the one given as `dynamic_shapes`. Measured with torch 2.15: a
`ShapesSpec` holds its `ParamsSpec` in `_params`, which holds `{parameter: TensorSpec}` in
`_named_args`; a `TensorSpec` iterates over its dimensions, a `ShapeVar` has a `name`. The
partial graph torch attaches to the error says which symbol each input dimension got
(`def forward(self, arg0_1: "f32[u0, 4]")`, after the lifted parameters and buffers). Anything
else found there names nothing.
"""

from __future__ import annotations

import inspect
import re

from .entrypoint import Target

_SIGNATURE = re.compile(r"def forward\(self,?\s*(.*?)\):")
_ARGUMENT = re.compile(r'(\w+): "\w+\[([^\]]*)\]"')
_UNBACKED = re.compile(r"u\d+")


def named_args(spec) -> dict:
    """{parameter: TensorSpec} of a `ShapesSpec`, a `ParamsSpec` or a plain dict spec."""
    if type(spec).__name__ == "ShapesSpec":
        spec = getattr(spec, "_params", None)
    if type(spec).__name__ == "ParamsSpec":
        spec = getattr(spec, "_named_args", None)
    return spec if isinstance(spec, dict) else {}


def declared_symbols(target: Target, graph_text: str) -> dict[str, str]:
    """{`u0`: "dimension 0 of `x`, `ShapeVar("batch")` of `@dynamic_spec`"} for the input
    dimensions the spec declares; empty when the model has no such spec or the graph does not
    show its inputs."""
    forward = getattr(target.model, "forward", None)
    spec = getattr(forward, "_dynamic_spec", None)
    if spec is None and type(target.dynamic_shapes).__name__ in ("ShapesSpec", "ParamsSpec"):
        spec = target.dynamic_shapes
    named = named_args(spec)
    signature = _SIGNATURE.search(graph_text)
    if not named or signature is None:
        return {}
    arguments = _ARGUMENT.findall(signature.group(1))
    try:
        parameters = list(inspect.signature(forward).bind(*target.args, **(target.kwargs or {})).arguments)
    except (TypeError, ValueError):
        return {}
    # The graph lifts the module's parameters and buffers first; the user's inputs come last.
    if len(arguments) < len(parameters):
        return {}
    declared = {}
    for parameter, (_, sizes) in zip(parameters, arguments[len(arguments) - len(parameters) :], strict=True):
        try:
            dims = list(named.get(parameter) or [])
        except TypeError:
            continue
        for index, (size, dim) in enumerate(zip((s.strip() for s in sizes.split(",")), dims, strict=False)):
            name = getattr(dim, "name", None)
            if _UNBACKED.fullmatch(size) and isinstance(name, str):
                declared[size] = f'dimension {index} of `{parameter}`, `ShapeVar("{name}")` of `@dynamic_spec` (an unbacked size)'
    return declared
