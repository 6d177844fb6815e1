"""Module hooks the user registered, where they are defined, and what export does with them.

Measured with torch 2.15 (`docs/measured/torch-2.15-failure-kinds.md`): export runs the forward
pre-hooks and hooks of the exported module and its submodules while tracing and keeps what they
compute, strict and not; what a hook changes outside the tensors (a counter, a list it appends
to) happens once, while exporting. Global hooks (`register_module_forward_hook`) make strict
export fail with a graph break inside torch ("Attempted to inline function marked as skipped",
`ModuleToTrace.forward`) that names no line of the user's.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
from collections.abc import Callable

from .findings import Location


@dataclasses.dataclass
class Hook:
    """A hook function of the user's: its name, what kind of hook, and where it is defined."""

    name: str
    kind: str
    place: Location


def _function(hook):
    """The Python function behind a hook (a bound method's, a `functools.partial`'s)."""
    while isinstance(hook, functools.partial):
        hook = hook.func
    hook = getattr(hook, "__func__", hook)
    try:
        return inspect.unwrap(hook)
    except ValueError:
        return hook


def _user_hook(hook, kind: str, is_user_file: Callable[[str], bool]) -> Hook | None:
    code = getattr(_function(hook), "__code__", None)
    if code is None or not is_user_file(code.co_filename):
        return None
    return Hook(code.co_name, kind, Location(os.path.abspath(code.co_filename), code.co_firstlineno))


def global_hooks(is_user_file: Callable[[str], bool]) -> list[Hook]:
    """The global module hooks (`torch.nn.modules.module.register_module_forward_hook` and its
    pre-hook kin) defined in the user's files."""
    from torch.nn.modules import module as nn_module

    found = []
    for kind, table in (
        ("global forward pre-hook", getattr(nn_module, "_global_forward_pre_hooks", {})),
        ("global forward hook", getattr(nn_module, "_global_forward_hooks", {})),
    ):
        for hook in list(table.values()):
            user = _user_hook(hook, kind, is_user_file)
            if user is not None:
                found.append(user)
    return found


def module_hooks(model, is_user_file: Callable[[str], bool]) -> list[Hook]:
    """The forward pre-hooks and hooks on `model` and its submodules defined in the user's
    files, each function once."""
    found: list[Hook] = []
    seen: set[tuple[str, int]] = set()
    try:
        modules = list(model.modules())
    except Exception:  # noqa: BLE001 - a model that cannot list its modules has none to tell
        return []
    for module in modules:
        for kind, table in (
            ("forward pre-hook", getattr(module, "_forward_pre_hooks", {})),
            ("forward hook", getattr(module, "_forward_hooks", {})),
        ):
            for hook in list(table.values()):
                user = _user_hook(hook, kind, is_user_file)
                if user is not None and (user.place.file, user.place.line) not in seen:
                    seen.add((user.place.file, user.place.line or 0))
                    found.append(user)
    return found


def skipped_module_forward(messages: str) -> bool:
    """Strict export's graph break on torch's own wrapper of the exported module, which is what
    a global module hook makes it step into."""
    return "marked as skipped" in messages and "ModuleToTrace.forward" in messages
