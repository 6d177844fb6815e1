"""Where a failure is in the user's files: frames of tracebacks, of torch's stacks and of the
stack traces the exporter keeps on graph nodes; and the installed libraries it went through."""

from __future__ import annotations

import linecache
import os
import re
import traceback
from collections.abc import Callable

from .findings import Location, Related, frame_location
from .workspace import Workspace


def deepest_user_frame(frames, workspace: Workspace):
    found = None
    for frame in frames or []:
        filename = getattr(frame, "filename", None)
        if workspace.contains(filename) and getattr(frame, "lineno", None):
            found = frame
    return found


def exception_location(chain: list[BaseException], workspace: Workspace) -> Location | None:
    # Strict export (and torch.cond branches) interpret the user's bytecode: the frames are in
    # `real_stack`, deeper than anything in the Python traceback.
    for exc in chain:
        frame = deepest_user_frame(getattr(exc, "real_stack", None), workspace)
        if frame is None:
            summary = getattr(exc, "innermost_user_frame_summary", None)
            if summary is not None and workspace.contains(getattr(summary, "filename", None)):
                frame = summary
        if frame is not None:
            return frame_location(frame)
    # Non-strict export runs forward for real: the user's frames are in the traceback.
    for exc in chain:
        frame = deepest_user_frame(traceback.extract_tb(exc.__traceback__), workspace)
        if frame is not None:
            return frame_location(frame)
    # Last resort: the message's own `File "…", line N` or `(path:N in fn)`.
    for exc in chain:
        text = str(exc)
        found = None
        for match in re.finditer(r'File "([^"]+)", line (\d+)', text):
            if workspace.contains(match.group(1)):
                found = Location(os.path.abspath(match.group(1)), int(match.group(2)))
        if found is not None:
            return found  # the innermost frame of the user's files the message names
        for match in re.finditer(r"\(([^():\s]+\.py):(\d+) in [^)]*\)", text):
            path = _resolve_relative(match.group(1), workspace)
            if path is not None:
                return Location(path, int(match.group(2)))
    return None


# Top-level packages of the exporter itself and of what it runs on: their frames are how torch
# works, never where a user's model failed.
_EXPORTER_PACKAGES = frozenset({"torch", "functorch", "sympy", "mpmath", "typing_extensions", "_pytest", "pt2lsp"})


# Library frames kept as related locations, the deepest ones (where the failure happened).
RELATED_FRAMES_LIMIT = 6


def installed_package(filename: str | None) -> str | None:
    """The top-level package of a file in site-packages (or dist-packages), None elsewhere."""
    if not filename:
        return None
    parts = os.path.abspath(filename).split(os.sep)
    for index in range(len(parts) - 2, -1, -1):
        if parts[index] in ("site-packages", "dist-packages"):
            top = parts[index + 1]
            return top[:-3] if top.endswith(".py") else top
    return None


def installed_path(filename: str) -> str:
    """A file in site-packages as the import path shows it (`timm/layers/patch_embed.py`); other
    files unchanged."""
    parts = os.path.abspath(filename).split(os.sep)
    for index in range(len(parts) - 2, -1, -1):
        if parts[index] in ("site-packages", "dist-packages"):
            return "/".join(parts[index + 1 :])
    return filename


def _column_in_characters(filename: str, line: int, column: int | None) -> int:
    """A 1-based column in characters from a 0-based column in UTF-8 bytes (1 when unknown)."""
    if column is None:
        return 1
    text = linecache.getline(filename, line)
    return len(text.encode("utf-8")[:column].decode("utf-8", errors="ignore")) + 1


def library_frames(chain: list[BaseException], workspace: Workspace) -> list[Related]:
    """The frames of installed code (site-packages, outside torch) between the deepest frame of
    the user's workspace and the failure, deepest last, as related locations: a failure inside
    torchvision's `ops/boxes.py` is reported on the user's line that calls into it, and these
    say which library lines it went through."""
    for exc in reversed(chain):
        related = library_path(traceback.extract_tb(exc.__traceback__), workspace, "the export failed here")
        if related:
            return related
    return []


def library_path(frames, workspace: Workspace, deepest_says: str) -> list[Related]:
    """The installed-code frames (outermost first) after the deepest workspace frame of
    `frames`, as related locations; the deepest says `deepest_says`. Frames need `filename`,
    `lineno` and `name` (`colno` when known)."""
    frames = list(frames or [])
    deepest_user = max((i for i, frame in enumerate(frames) if workspace.contains(frame.filename)), default=-1)
    library = []
    for frame in frames[deepest_user + 1 :]:
        package = installed_package(frame.filename)
        if package is None or package in _EXPORTER_PACKAGES or workspace.contains(frame.filename):
            continue
        if not frame.lineno:
            continue
        library.append(frame)
    library = library[-RELATED_FRAMES_LIMIT:]
    related = []
    for index, frame in enumerate(library):
        filename = os.path.abspath(frame.filename)
        what = deepest_says if index == len(library) - 1 else "called through here"
        related.append(
            Related(
                filename,
                frame.lineno,
                _column_in_characters(filename, frame.lineno, getattr(frame, "colno", None)),
                f"{what}, in {frame.name} ({installed_package(frame.filename)}, installed code)",
            )
        )
    return related


def _resolve_relative(fragment: str, workspace: Workspace) -> str | None:
    """Torch prints `fixtures/x.py:8`: a path made relative to something; find the user file."""
    candidates = [workspace.entry_file] + [os.path.join(root, fragment) for root in workspace.roots]
    for candidate in candidates:
        if candidate.endswith(fragment.lstrip("./")) and workspace.contains(candidate) and os.path.exists(candidate):
            return os.path.abspath(candidate)
    return None


def user_stack_in_message(text: str) -> bool:
    return "User stack:" in text or "User Stack" in text


def user_stack_location(stack, filenames: dict, workspace: Workspace) -> Location | None:
    """The innermost frame of the user's files in a structured-trace stack (file names
    interned: `filenames` maps their indices back)."""
    found = None
    for frame in stack or []:
        name = frame.get("filename")
        filename = filenames.get(name, name) if isinstance(name, int) else name
        if isinstance(filename, str) and workspace.contains(filename):
            found = Location(os.path.abspath(filename), frame.get("line"))
    return found


def graph_node_location(program, op: str, workspace: Workspace) -> Location | None:
    """The user's line that called `op`, from the stack trace of its node in the graph."""
    try:
        for node in program.graph.nodes:
            if str(node.target) != op:
                continue
            stack_trace = node.meta.get("stack_trace") or ""
            found = None
            for match in re.finditer(r'File "([^"]+)", line (\d+)', stack_trace):
                if workspace.contains(match.group(1)):
                    found = Location(os.path.abspath(match.group(1)), int(match.group(2)))
            if found:
                return found
    except Exception:
        pass
    return None


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def stack_frames(trace: str) -> list[tuple[str, int]]:
    """(file, line) of each `File "…", line N` of a stack trace's text, outermost first."""
    return [(match.group(1), int(match.group(2))) for match in _FRAME.finditer(trace or "")]


def user_place(node, is_user_file: Callable[[str], bool]) -> Location | None:
    """The innermost user frame of a graph node's stack trace."""
    trace = node.meta.get("stack_trace") or ""
    found = None
    for match in _FRAME.finditer(trace):
        if is_user_file(match.group(1)):
            found = Location(match.group(1), int(match.group(2)))
    return found
