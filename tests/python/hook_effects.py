"""Run one hook fixture eagerly and as its exported program; print what each did besides its
outputs, as JSON on the last line of stdout.

Usage: python hook_effects.py FIXTURE.py

The fixture follows the convention (module-level `model`, `example_args`, optional `strict`)
and registers its hooks when imported. The model is exported in the file's mode, then called
twice eagerly and twice as `ep.module()`, on the same fresh inputs, and for each side:

- "stdout": something was printed;
- "logs": a log record was emitted (any logger);
- "files": a file under the temporary directory named `pt2lsp_fixture_*` grew;
- "attributes": an attribute of a module (its `__dict__`, not parameters or buffers) was set;
- "globals": a module-level list, dict or set of the fixture changed.

It also says whether the outputs and the buffers agree.
"""

from __future__ import annotations

import contextlib
import glob
import importlib.util
import io
import json
import logging
import os
import sys
import tempfile


def _files() -> dict[str, int]:
    pattern = os.path.join(tempfile.gettempdir(), "pt2lsp_fixture_*")
    return {path: os.path.getsize(path) for path in glob.glob(pattern)}


def _attributes(model) -> dict[tuple[str, str], object]:
    """Each module attribute's value itself, not its `id`: the snapshot keeps the old objects
    alive, so a value set during the calls cannot reuse a freed object's address and pass for
    the old one (a hook that sets `last_output` on every call did, now and then)."""
    return {
        (name, key): value
        for name, module in model.named_modules()
        for key, value in vars(module).items()
        if not key.startswith("_") and key != "training"
    }


def _same_attributes(before: dict, after: dict) -> bool:
    return before.keys() == after.keys() and all(after[key] is value for key, value in before.items())


def _globals(fixture) -> dict[str, str]:
    return {
        key: repr(value)
        for key, value in vars(fixture).items()
        if isinstance(value, (list, dict, set)) and not key.startswith("_")
    }


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += 1


def _effects(fixture, model, inputs) -> tuple[list[str], list]:
    handler = _Records()
    logging.getLogger().addHandler(handler)
    files, attributes, state = _files(), _attributes(model), _globals(fixture)
    out = io.StringIO()
    outputs = []
    with contextlib.redirect_stdout(out):
        for args in inputs:
            outputs.append(model(*args))
    logging.getLogger().removeHandler(handler)
    effects = []
    if out.getvalue():
        effects.append("stdout")
    if handler.count:
        effects.append("logs")
    if _files() != files:
        effects.append("files")
    if not _same_attributes(attributes, _attributes(model)):
        effects.append("attributes")
    if _globals(fixture) != state:
        effects.append("globals")
    return effects, outputs


def main(path: str) -> None:
    import torch

    spec = importlib.util.spec_from_file_location("hook_fixture", path)
    fixture = importlib.util.module_from_spec(spec)
    sys.modules["hook_fixture"] = fixture
    spec.loader.exec_module(fixture)
    model = fixture.model
    strict = bool(getattr(fixture, "strict", False))
    with contextlib.redirect_stdout(io.StringIO()):
        program = torch.export.export(model, tuple(fixture.example_args), strict=strict).module()
    torch.manual_seed(0)
    inputs = [tuple(torch.randn_like(arg) for arg in fixture.example_args) for _ in range(2)]
    with torch.no_grad():
        eager, eager_outputs = _effects(fixture, model, inputs)
        exported, exported_outputs = _effects(fixture, program, inputs)
    outputs_agree = all(torch.allclose(a, b) for a, b in zip(eager_outputs, exported_outputs, strict=True))
    eager_buffers = dict(model.named_buffers())
    buffers_agree = all(
        name in eager_buffers and torch.equal(eager_buffers[name], value) for name, value in program.named_buffers()
    )
    result = {
        "eager": eager,
        "exported": exported,
        "outputs_agree": outputs_agree,
        "buffers_agree": buffers_agree,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1])
