"""Automatic fake weights: a model whose parameters would not fit in memory is built under
FakeTensorMode instead of filling the machine (or dying of the memory limit) first.

The entrypoint is built for real while every `nn.Parameter` made is counted. A model with under
`PROBE_BYTES` of parameters (nearly all) pays one addition per parameter and nothing else. Past
that, the build stops (`ParametersTooLarge`) and is run again on the meta device, which allocates
nothing, to count all its parameters: if they pass the budget (half the memory the job may use:
the machine's available memory, or the job's `memory-limit` when smaller) the model is built with
fake weights, else for real. A build that cannot run on the meta device is built for real with
the budget as its limit instead.
"""

from __future__ import annotations

import contextlib
import os
import sys


class ParametersTooLarge(MemoryError):
    """Raised from inside the user's model construction; a MemoryError, so every handler that
    lets an out-of-memory through lets this through too."""

    def __init__(self, parameter_bytes: int, budget: int) -> None:
        super().__init__(f"the model's parameters pass {_gib(parameter_bytes)} of a {_gib(budget)} budget")
        self.parameter_bytes = parameter_bytes
        self.budget = budget

    def reason(self) -> str:
        return (
            f"its parameters would not fit in memory: {_gib(self.parameter_bytes)} of them, "
            f"with {_gib(self.budget * 2)} available"
        )


def parameter_budget(memory_limit_mb: int | None) -> int | None:
    """Bytes of parameters a real build may make; `None` when the memory cannot be read."""
    available = _available_bytes()
    if memory_limit_mb:
        limit = int(memory_limit_mb) * 1024 * 1024
        available = limit if available is None else min(available, limit)
    return None if available is None else available // 2


# Parameters a real build makes before its total is counted on the meta device.
PROBE_BYTES = 1 << 30


@contextlib.contextmanager
def counting_parameters(limit: int | None = None, *, storageless: bool = False):
    """Counts the bytes of the parameters made in the block (real ones; meta and fake ones too
    when `storageless`); yields a one-item list holding the running total. Raises
    `ParametersTooLarge` from the construction that passes `limit`."""
    import torch

    original = torch.nn.Parameter.__new__
    made = [0]

    def counted(cls, data=None, requires_grad=True):
        parameter = original(cls, data, requires_grad)
        if data is not None and (storageless or not _is_storageless(data)):
            made[0] += data.numel() * data.element_size()
            if limit is not None and made[0] > limit:
                raise ParametersTooLarge(made[0], limit)
        return parameter

    torch.nn.Parameter.__new__ = staticmethod(counted)
    try:
        yield made
    finally:
        torch.nn.Parameter.__new__ = staticmethod(original)


def meta_parameter_bytes(build) -> int | None:
    """The bytes of parameters `build()` makes, run on the meta device (nothing allocated);
    `None` when the build cannot run there (it reads a tensor's values, say)."""
    import torch

    try:
        with torch.device("meta"), counting_parameters(storageless=True) as made:
            build()
    except Exception:  # noqa: BLE001 - any failure means the count is unknown
        return None
    return made[0]


def forget_modules_since(before: set[str]) -> None:
    """Drops the modules imported by a build that was given up: importing them again must run
    their module-level code (which builds the model) again."""
    for name in set(sys.modules) - before:
        sys.modules.pop(name, None)


def _is_storageless(data) -> bool:
    if getattr(data, "is_meta", False):
        return True
    return type(data).__name__ == "FakeTensor"


def _available_bytes() -> int | None:
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _gib(count: int) -> str:
    return f"{count / 2**30:.1f} GiB"
