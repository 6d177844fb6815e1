"""What an exported program says about itself: its inputs, its ranges, the user's Dim names."""

from __future__ import annotations

from .entrypoint import Target

_DTYPES = {
    "float32": "f32",
    "float64": "f64",
    "float16": "f16",
    "bfloat16": "bf16",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint8": "u8",
    "bool": "b8",
    "complex64": "c64",
    "complex128": "c128",
}


def describe_inputs(program) -> list[str]:
    """`x: f32[s77, 64]` for each user input of the program."""
    described = []
    try:
        user_inputs = set(program.graph_signature.user_inputs)
        for node in program.graph.nodes:
            if node.op != "placeholder" or node.name not in user_inputs:
                continue
            value = node.meta.get("val")
            shape = getattr(value, "shape", None)
            if shape is None:
                described.append(f"{node.name}: {value!r}"[:200])
                continue
            dtype = str(getattr(value, "dtype", "")).replace("torch.", "")
            dims = ", ".join(str(size) for size in shape)
            described.append(f"{node.name}: {_DTYPES.get(dtype, dtype)}[{dims}]")
    except Exception:  # noqa: BLE001 - a description, never a reason to fail the export
        pass
    return described


def range_constraints(program, target: Target) -> list[dict]:
    names = dim_names(program, target)
    constraints = []
    for symbol, bounds in (getattr(program, "range_constraints", None) or {}).items():
        constraints.append(
            {"symbol": str(symbol), "dim": names.get(str(symbol)), "min": finite(bounds.lower), "max": finite(bounds.upper)}
        )
    constraints.sort(key=lambda c: c["symbol"])
    return constraints


def finite(value) -> int | None:
    """An integer bound, or None for an unbounded one. Torch's `int_oo` (the upper bound of
    every `Dim` without a max, and of `Dim.AUTO` and `Dim.DYNAMIC`) says it is finite and
    cannot be converted with int(), so infinities are recognised by their type first."""
    try:
        import sympy

        if isinstance(value, sympy.Basic) and (not value.is_number or value.is_infinite or "Infinity" in type(value).__name__):
            return None
    except ImportError:
        pass
    try:
        if getattr(value, "is_finite", True) is False:
            return None
        number = int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None
    # Any bound this large is an infinity in another guise.
    return number if abs(number) < 2**62 else None


def dim_names(program, target: Target) -> dict[str, str]:
    """{symbol: the user's Dim name} for the dims the program's inputs were declared with."""
    spec = target.dynamic_shapes
    names: dict[str, str] = {}
    if spec is None:
        return names
    try:
        placeholders = {node.name: node for node in program.graph.nodes if node.op == "placeholder"}
        user_inputs = list(program.graph_signature.user_inputs)
        if isinstance(spec, dict):
            pairs = [(key, dims) for key, dims in spec.items()]
        else:
            pairs = list(zip(user_inputs, spec, strict=False))
        for key, dims in pairs:
            node = placeholders.get(key)
            shape = getattr(node.meta.get("val") if node is not None else None, "shape", None)
            if shape is None or dims is None:
                continue
            items = dims.items() if isinstance(dims, dict) else enumerate(dims) if isinstance(dims, (list, tuple)) else ()
            for index, dim in items:
                name = getattr(dim, "__name__", None)
                if isinstance(name, str) and isinstance(index, int) and index < len(shape):
                    symbol = str(shape[index])
                    if symbol.isidentifier():
                        names.setdefault(symbol, name)
    except Exception:  # noqa: BLE001 - names are a courtesy
        pass
    return names
