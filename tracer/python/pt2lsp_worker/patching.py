"""Wrapping a function of torch for the length of a step, to read what torch does not return."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable


@contextlib.contextmanager
def patched(module_name: str, attribute: str, wrap: Callable[[Callable], Callable]):
    """Replaces `module_name.attribute` with `wrap(original)` for the body of the `with`, and
    puts the original back after it; a torch without the module or the attribute runs the body
    unchanged."""
    try:
        module = importlib.import_module(module_name)
    except Exception:  # noqa: BLE001 - another torch version: nothing to wrap
        yield
        return
    original = getattr(module, attribute, None)
    if original is None:
        yield
        return
    setattr(module, attribute, wrap(original))
    try:
        yield
    finally:
        setattr(module, attribute, original)
