"""Run a fix fixture before and after its fix, and export the fixed one with real torch.

Usage:
    python run_fixed.py ORIGINAL.py FIXED.py OUT.json
    python run_fixed.py --serve

The second form is a fork server (as export_fixture.py's): it imports torch once, then runs each
request line {"original", "fixed", "out", "cwd", "timeout"} in a freshly forked child.

Both files follow the fixture convention (fixtures/README.md): module-level `model`,
`example_args`, optional `example_kwargs`, `dynamic_shapes`, `strict`, and `fix_inputs`, a list
of argument tuples that exercise every branch the fix rewrote.

1. A forked child imports ORIGINAL (in its own process: a file that defines a custom op cannot
   be imported twice in one) and runs its model eagerly on each of its `fix_inputs`; the inputs
   and outputs are saved with torch.save.
2. This process imports FIXED, exports it with `torch.export.export` in the file's mode, and
   runs, on the original's inputs, the fixed model eagerly and the exported program's module.
3. OUT.json says what happened: {"ok": bool, "phase": ..., "message": ..., "cases": [...]}.
   ok means: the export succeeded and, on every input, eager(original) == eager(fixed) ==
   exported(fixed) (torch.allclose, structure-aware: tuples, lists, dicts, scalars).

Every model call starts from a fresh copy of the model and a fixed seed, so a model that
mutates a buffer or uses dropout compares like with like.

A fixture with `fix_compare = "distribution"` draws at random by design (a fix that moves a
draw from Python's `random` into the graph cannot reproduce the same numbers): each model is
called DRAWS times in a row on each input, without reseeding, and for each of the first
POSITIONS numbers of the outputs (flattened), the original's draws, eager(fixed)'s and
exported(fixed)'s must pass a two-sample Kolmogorov-Smirnov test at the 0.001 level; and the
exported program must not return one frozen value where the original varies.

A fixture with `fix_compare = "arrays_as_tensors"` has a fix that returns a tensor where the
original returned a NumPy array (PT201's, on the exported `forward`: the exported program
returns a tensor there anyway): the original's arrays and NumPy scalars are compared as tensors.

A fixture with `fix_compare = "sequence"` keeps state across calls by design (a counter moved
into a buffer): on each input, each model is called CALLS times in a row from one fresh copy,
and the i-th outputs must agree.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib.util
import json
import os
import signal
import sys
import tempfile
import traceback

SEED = 20240501
DRAWS = 300
CALLS = 3
POSITIONS = 4


def _load(path: str, name: str):
    import torch

    torch.manual_seed(SEED)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _call(model, args: tuple, kwargs: dict | None):
    import torch

    torch.manual_seed(SEED)
    with torch.no_grad():
        return model(*args, **(kwargs or {}))


def _fix_inputs(module) -> list[tuple]:
    inputs = getattr(module, "fix_inputs", None)
    if not inputs:
        raise ValueError(
            "the fixture has no `fix_inputs`: a list of argument tuples, one per branch"
        )
    return [tuple(args) for args in inputs]


def _kwargs(module) -> dict | None:
    return getattr(module, "example_kwargs", None)


def _difference(expected, actual, where: str = "output") -> str | None:
    """Why `actual` differs from `expected`, or None when they agree."""
    import torch

    if isinstance(expected, torch.Tensor) or isinstance(actual, torch.Tensor):
        if not (
            isinstance(expected, torch.Tensor) and isinstance(actual, torch.Tensor)
        ):
            return f"{where}: {type(expected).__name__} vs {type(actual).__name__}"
        if expected.shape != actual.shape:
            return f"{where}: shape {tuple(expected.shape)} vs {tuple(actual.shape)}"
        if expected.dtype != actual.dtype:
            return f"{where}: dtype {expected.dtype} vs {actual.dtype}"
        if expected.is_floating_point() or expected.is_complex():
            same = torch.allclose(
                expected, actual, rtol=1e-5, atol=1e-6, equal_nan=True
            )
        else:
            same = torch.equal(expected, actual)
        if not same:
            return f"{where}: values differ (max abs diff {(expected.double() - actual.double()).abs().max().item():.3g})"
        return None
    if isinstance(expected, (tuple, list)) and isinstance(actual, (tuple, list)):
        if len(expected) != len(actual):
            return f"{where}: {len(expected)} items vs {len(actual)}"
        for index, (e, a) in enumerate(zip(expected, actual)):
            found = _difference(e, a, f"{where}[{index}]")
            if found:
                return found
        return None
    if isinstance(expected, dict) and isinstance(actual, dict):
        if set(expected) != set(actual):
            return f"{where}: keys {sorted(map(str, expected))} vs {sorted(map(str, actual))}"
        for key in expected:
            found = _difference(expected[key], actual[key], f"{where}[{key!r}]")
            if found:
                return found
        return None
    if dataclasses.is_dataclass(expected) and dataclasses.is_dataclass(actual):
        if type(expected).__name__ != type(actual).__name__:
            return f"{where}: {type(expected).__name__} vs {type(actual).__name__}"
        for field in dataclasses.fields(expected):
            found = _difference(
                getattr(expected, field.name),
                getattr(actual, field.name),
                f"{where}.{field.name}",
            )
            if found:
                return found
        return None
    if isinstance(expected, float) and isinstance(actual, float):
        return (
            None
            if abs(expected - actual) <= 1e-6 + 1e-5 * abs(expected)
            else f"{where}: {expected} vs {actual}"
        )
    return None if expected == actual else f"{where}: {expected!r} vs {actual!r}"


def _original_outputs(path: str, saved: str) -> None:
    """In a forked child: the original's inputs and eager outputs, saved to `saved`."""
    import torch

    module = _load(path, "pt2lsp_original")
    inputs = _fix_inputs(module)
    if _compares_distributions(module):
        outputs = [
            _draws(copy.deepcopy(module.model), args, _kwargs(module))
            for args in inputs
        ]
    elif _compares_sequences(module):
        outputs = [
            _sequence(copy.deepcopy(module.model), args, _kwargs(module))
            for args in inputs
        ]
    else:
        outputs = [
            _call(copy.deepcopy(module.model), args, _kwargs(module)) for args in inputs
        ]
    if getattr(module, "fix_compare", "values") == "arrays_as_tensors":
        outputs = [_arrays_as_tensors(output) for output in outputs]
    torch.save({"inputs": inputs, "outputs": outputs}, saved)


def _arrays_as_tensors(value):
    """`value` with each NumPy array or scalar in it made a tensor (same dtype and values)."""
    import numpy as np
    import torch

    if isinstance(value, (np.ndarray, np.generic)):
        return torch.from_numpy(np.array(value))
    if isinstance(value, (tuple, list)):
        return type(value)(_arrays_as_tensors(item) for item in value)
    if isinstance(value, dict):
        return {key: _arrays_as_tensors(item) for key, item in value.items()}
    return value


def _compares_distributions(module) -> bool:
    return getattr(module, "fix_compare", "values") == "distribution"


def _compares_sequences(module) -> bool:
    return getattr(module, "fix_compare", "values") == "sequence"


def _sequence(model, args: tuple, kwargs: dict | None) -> list:
    """CALLS calls of one `model` in a row: the state it keeps between calls shows."""
    return [_call(model, args, kwargs) for _ in range(CALLS)]


def _draws(model, args: tuple, kwargs: dict | None) -> list[list[float]]:
    """DRAWS calls of `model` in a row (one seed for all of them, Python's and torch's), each
    output's first POSITIONS numbers."""
    import random

    import torch

    random.seed(SEED)
    torch.manual_seed(SEED)
    draws = []
    with torch.no_grad():
        for _ in range(DRAWS):
            draws.append(_numbers(model(*args, **(kwargs or {})))[:POSITIONS])
    return draws


def _numbers(output) -> list[float]:
    """The numbers of an output (tensors, tuples, lists, dicts, scalars), flattened in order."""
    import torch

    if isinstance(output, torch.Tensor):
        return output.detach().double().flatten().tolist()
    if isinstance(output, (tuple, list)):
        return [number for item in output for number in _numbers(item)]
    if isinstance(output, dict):
        return [number for key in output for number in _numbers(output[key])]
    if isinstance(output, (int, float)):
        return [float(output)]
    return []


def _ks_statistic(a: list[float], b: list[float]) -> float:
    """The two-sample Kolmogorov-Smirnov statistic: the largest gap between the empirical
    distribution functions."""
    a, b = sorted(a), sorted(b)
    i = j = 0
    gap = 0.0
    while i < len(a) and j < len(b):
        value = min(a[i], b[j])
        while i < len(a) and a[i] == value:
            i += 1
        while j < len(b) and b[j] == value:
            j += 1
        gap = max(gap, abs(i / len(a) - j / len(b)))
    return gap


def _distribution_difference(
    expected: list[list[float]], actual: list[list[float]], where: str
) -> str | None:
    """Why `actual`'s draws do not look like `expected`'s (see the module's docstring)."""
    if len(expected[0]) != len(actual[0]):
        return f"{where}: {len(expected[0])} numbers per output vs {len(actual[0])}"
    # The critical value at the 0.001 level: c(0.001) * sqrt((n + m) / (n * m)).
    critical = (
        1.949 * ((len(expected) + len(actual)) / (len(expected) * len(actual))) ** 0.5
    )
    for position in range(len(expected[0])):
        before = [draw[position] for draw in expected]
        after = [draw[position] for draw in actual]
        if len(set(before)) > 1 and len(set(after)) == 1:
            return f"{where}: number {position} is frozen at {after[0]} where the original varies"
        statistic = _ks_statistic(before, after)
        if statistic > critical:
            return (
                f"{where}: number {position} is drawn from another distribution "
                f"(Kolmogorov-Smirnov {statistic:.3f} > {critical:.3f}; means {sum(before) / len(before):.4g} "
                f"vs {sum(after) / len(after):.4g})"
            )
    return None


def _run_original(path: str, saved: str) -> str | None:
    """Forks the child that runs the original; returns its failure, if any."""
    sys.stdout.flush()
    sys.stderr.flush()
    error_file = saved + ".error"
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            _original_outputs(path, saved)
        except BaseException:
            with open(error_file, "w") as f:
                f.write(traceback.format_exc()[-4000:])
            code = 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.path.exists(error_file):
        with open(error_file) as f:
            return f.read()
    if status != 0:
        return f"the original's process ended with status {status}"
    return None


def run(original: str, fixed: str) -> dict:
    import torch

    with tempfile.TemporaryDirectory() as scratch:
        saved = os.path.join(scratch, "original.pt")
        failure = _run_original(original, saved)
        if failure:
            return {"ok": False, "phase": "original", "message": failure}
        try:
            module = _load(fixed, "pt2lsp_fixed")
        except BaseException:
            return {
                "ok": False,
                "phase": "import",
                "message": traceback.format_exc()[-4000:],
            }
        # Inputs and outputs that are instances of the fixture's own classes (a dataclass) were
        # pickled as `pt2lsp_original.Cls`; the fixed file defines the same classes.
        sys.modules["pt2lsp_original"] = module
        expected = torch.load(saved, weights_only=False)
    strict = bool(getattr(module, "strict", False))
    try:
        program = torch.export.export(
            copy.deepcopy(module.model),
            tuple(module.example_args),
            _kwargs(module),
            dynamic_shapes=getattr(module, "dynamic_shapes", None),
            strict=strict,
        )
    except Exception:
        return {
            "ok": False,
            "phase": "export",
            "strict": strict,
            "message": traceback.format_exc()[-6000:],
        }

    cases = []
    ok = True
    if _compares_distributions(module):
        for index, (args, original_draws) in enumerate(
            zip(expected["inputs"], expected["outputs"])
        ):
            case = {"input": index}
            for side, model in (
                ("eager", copy.deepcopy(module.model)),
                ("exported", program.module()),
            ):
                try:
                    draws = _draws(model, args, _kwargs(module))
                    case[side] = _distribution_difference(
                        original_draws, draws, f"{side}(fixed)"
                    )
                except Exception:
                    case[side] = (
                        f"{side}(fixed) raised: " + traceback.format_exc()[-3000:]
                    )
            ok = ok and case["eager"] is None and case["exported"] is None
            cases.append(case)
        return {"ok": ok, "phase": "compare", "strict": strict, "cases": cases}
    # One call per input, or CALLS in a row from one model for a fixture comparing sequences.
    call = _sequence if _compares_sequences(module) else _call
    for index, (args, original_output) in enumerate(
        zip(expected["inputs"], expected["outputs"])
    ):
        case: dict = {"input": index}
        try:
            eager = call(copy.deepcopy(module.model), args, _kwargs(module))
            case["eager"] = _difference(original_output, eager, "eager(fixed)")
        except Exception:
            case["eager"] = "eager(fixed) raised: " + traceback.format_exc()[-3000:]
        try:
            # A fresh copy per input, as for eager: the modules `program.module()` returns share
            # the program's non-persistent buffers, so one input's calls would carry into the next.
            exported = call(copy.deepcopy(program.module()), args, _kwargs(module))
            case["exported"] = _difference(original_output, exported, "exported(fixed)")
        except Exception:
            case["exported"] = (
                "exported(fixed) raised: " + traceback.format_exc()[-3000:]
            )
        ok = ok and case["eager"] is None and case["exported"] is None
        cases.append(case)
    return {"ok": ok, "phase": "compare", "strict": strict, "cases": cases}


def write_result(original: str, fixed: str, out: str) -> None:
    # User prints (non-strict export runs forward for real) must not mix with the result.
    with contextlib.redirect_stdout(sys.stderr):
        try:
            result = run(os.path.abspath(original), os.path.abspath(fixed))
        except BaseException:
            result = {
                "ok": False,
                "phase": "harness",
                "message": traceback.format_exc()[-4000:],
            }
    with open(out, "w") as f:
        json.dump(result, f, indent=1)


def serve() -> int:
    """Fork server: imports torch once, then runs each request line
    {"original", "fixed", "out", "cwd", "timeout"} in a freshly forked child and answers
    {"status": wait status} on stdout. Every case still gets its own process."""
    import torch  # noqa: F401  (the shared, expensive part)
    import torch._dynamo  # noqa: F401
    import torch.export  # noqa: F401

    proto = os.fdopen(os.dup(1), "w", buffering=1)
    # Nothing but protocol lines may reach the pipe.
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    proto.write("ready\n")
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.chdir(request["cwd"])
                signal.alarm(int(request.get("timeout") or 300))
                write_result(request["original"], request["fixed"], request["out"])
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        proto.write(json.dumps({"status": status}) + "\n")
    return 0


def main() -> int:
    if sys.argv[1:2] == ["--serve"]:
        return serve()
    original, fixed, out = sys.argv[1:4]
    write_result(original, fixed, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
