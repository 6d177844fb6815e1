"""Custom operators without a fake kernel (PT301): which operator torch names, and where the user's
files define it (recorded while the entrypoint is imported)."""

from __future__ import annotations

import os
import re
import sys

from .exceptions import is_kind
from .findings import Location
from .text import first_lines
from .workspace import Workspace


def normalize_op(name: str) -> str:
    """`ns.op.default`, `ns::op`, `<CustomOpDef(ns::op)>` -> `ns::op`."""
    name = name.strip()
    match = re.search(r"CustomOpDef\(([^)]+)\)", name)
    if match:
        name = match.group(1)
    if "::" in name:
        namespace, rest = name.split("::", 1)
        return f"{namespace}::{rest.split('.')[0]}"
    parts = name.split(".")
    if len(parts) >= 2:
        return f"{parts[0]}::{parts[1]}"
    return name


def missing_fake_kernel(chain, messages: str) -> str | None:
    for exc in chain:
        if is_kind(exc, "UnsupportedOperatorException"):
            func = getattr(exc, "func", None)
            return normalize_op(str(func) if func is not None else first_lines(str(exc), 1))
    match = re.search(r"no fake impl registered for (<CustomOpDef\([^)]*\)>|[\w:.]+)", messages)
    if match:
        return normalize_op(match.group(1))
    match = re.search(r"Operator does not support running with fake tensors.*?(?:operator|op):?\s*`?([\w:.]+)", messages, re.S)
    if match:
        return normalize_op(match.group(1))
    return None


def record_operator_definitions(workspace: Workspace) -> dict[str, Location]:
    """Where each custom operator is defined in the user's files: PT301 goes on the definition
    (`@custom_op` or `lib.define`), since that is where the fake kernel is missing."""
    definitions: dict[str, Location] = {}

    def user_frame():
        frame = sys._getframe(2)
        while frame is not None:
            if workspace.contains(frame.f_code.co_filename):
                return frame
            frame = frame.f_back
        return None

    def remember(qualname: str) -> None:
        frame = user_frame()
        if frame is not None and qualname not in definitions:
            definitions[qualname] = Location(os.path.abspath(frame.f_code.co_filename), frame.f_lineno)

    try:
        import torch.library as library

        original_define = library.Library.define

        def define(self, schema, *args, **kwargs):
            result = original_define(self, schema, *args, **kwargs)
            try:
                remember(f"{self.ns}::{str(schema).split('(')[0].split('.')[0].strip()}")
            except Exception:
                pass
            return result

        library.Library.define = define
    except Exception:
        pass
    try:
        from torch._library import custom_ops

        original_init = custom_ops.CustomOpDef.__init__

        def init(self, *args, **kwargs):
            original_init(self, *args, **kwargs)
            try:
                remember(f"{self._namespace}::{self._name}")
            except Exception:
                pass

        custom_ops.CustomOpDef.__init__ = init
    except Exception:
        pass
    return definitions
