"""Tensor subclasses built inside traced code: what export says of them, in the user's terms.

Measured with torch 2.15, gloo world size 1 (`docs/measured/torch-2.15-failure-kinds.md`):
DTensor parameters and inputs export, and the program agrees with eager; `DTensor.from_local`
inside `forward` fails in both modes with "Expected all pytree.tree_leaves of (args, kwargs) to
be graphable types, but found non-fx-graphable type <class '…DTensorSpec'>", on the user's line.
"""

from __future__ import annotations

import re

_UNGRAPHABLE = re.compile(r"non-fx-graphable type <class '([\w.]+)'>")


def ungraphable_subclass_spec(messages: str) -> str | None:
    """The tensor subclass's spec class that export could not put in the graph
    (`torch.distributed.tensor._dtensor_spec.DTensorSpec`), or None."""
    match = _UNGRAPHABLE.search(messages)
    if match is None or "tensor" not in match.group(1).lower():
        return None
    return match.group(1)


def ungraphable_subclass_message(spec: str) -> str:
    if "dtensor" in spec.lower():
        return (
            "a DTensor is built inside traced code (`DTensor.from_local`, `distribute_tensor`): export cannot put "
            f"its placement (`{spec.rsplit('.', 1)[-1]}`) in the graph. Give the model DTensor parameters or inputs "
            "instead (distribute them before exporting), which export traces"
        )
    return (
        f"a tensor subclass is built inside traced code: export cannot put its `{spec.rsplit('.', 1)[-1]}` in the "
        "graph. Build it outside `forward` and pass it in"
    )
