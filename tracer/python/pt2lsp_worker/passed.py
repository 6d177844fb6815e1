"""The lines of the user's files an export that succeeded ran: the exporter's evidence against a
static error there. A line counts when a graph node was made on it or under a call on it (every
user frame of the node's stack trace), or when the export added a guard there; a line the export
did not run (a branch the example inputs do not take) gives no evidence either way."""

from __future__ import annotations

import os

from .locations import stack_frames
from .workspace import Workspace


def passed_lines(program, guards: list[dict], workspace: Workspace) -> list[dict]:
    """[{"file", "lines"}]: the lines of the user's files the export ran, sorted."""
    found: dict[str, set[int]] = {}

    def note(filename: str | None, line: int | None) -> None:
        if filename and line and workspace.contains(filename):
            found.setdefault(os.path.abspath(filename), set()).add(int(line))

    for node in program.graph.nodes:
        for filename, line in stack_frames(node.meta.get("stack_trace") or ""):
            note(filename, line)
    for event in guards:
        for frame in event.get("python_stack") or []:
            note(getattr(frame, "filename", None), getattr(frame, "lineno", None))
    return [{"file": file, "lines": sorted(lines)} for file, lines in sorted(found.items())]
