"""What a job reports: findings placed in the user's files, as typed values.

A `Finding` is what the manager receives as one diagnostic (`to_json`, protocol 1: 1-based
lines, 0-based columns in UTF-8 bytes, null when only the line is known), plus what the trace
keeps between its steps about it (whether draft_export may find more, the constraint it
violates); those never leave the worker.
"""

from __future__ import annotations

import dataclasses
import os

from .workspace import binding_line, binding_node


@dataclasses.dataclass
class Location:
    """A place in a file: 1-based lines, 0-based columns in UTF-8 bytes."""

    file: str
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None

    @classmethod
    def of_node(cls, file: str, node) -> Location:
        """The span of a syntax tree node of `file`."""
        return cls(os.path.abspath(file), node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)


@dataclasses.dataclass
class Related:
    """A place that explains a finding; 1-based column in characters (None: the line's start)."""

    file: str
    line: int
    column: int | None
    message: str


@dataclasses.dataclass
class SuggestedFix:
    """One line of torch's `Suggested fixes:` block: `b = Dim('b', min=6)` is a range, `b = a`
    an equality, `b = 2*_b` a derived dim, `b = 8` a constant."""

    dim: str
    text: str
    kind: str
    min: int | None = None
    max: int | None = None
    value: int | None = None
    to: str | None = None
    expr: str | None = None
    root: str | None = None
    # The module-level binding that declares the dimension (`dim_declarations`), when the
    # user's files hold one.
    declared_file: str | None = None
    declared_line: int | None = None
    # The module-level name of the whole spec the dimension is written in, when the `Dim` is
    # bound by no name of its own (`DYNAMIC_SHAPES = {"x": {0: Dim("batch")}}`).
    declared_spec: str | None = None

    def to_json(self) -> dict:
        return {key: value for key, value in dataclasses.asdict(self).items() if value is not None}


@dataclasses.dataclass
class Finding:
    code: str
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    # "export", "draft_export" or "entrypoint": which step found it.
    origin: str = "export"
    # The exporter's exception class, when there was one.
    exception: str | None = None
    fixes: list[SuggestedFix] = dataclasses.field(default_factory=list)
    related: list[Related] = dataclasses.field(default_factory=list)

    # What the trace knows about it, never sent. draft_export may find more failures.
    collectable: bool = False
    # A constraint violation: its text, {source: Dim name} of the violated dims, and the guards
    # the failed export added (`trace.capture_guards`), to place it on the user's guard.
    constraint: bool = False
    violation: str | None = None
    dims: dict[str, str] = dataclasses.field(default_factory=dict)
    guards: list[dict] = dataclasses.field(default_factory=list)
    # {Dim name: size} when the example's size 0 or 1 is the cause (PT405).
    example_size: dict[str, int] = dataclasses.field(default_factory=dict)
    # The custom operator (`ns::op`) whose fake kernel is missing or wrong.
    op: str | None = None
    # A guard draft_export saw added (one of its GUARD_ADDED failures), in the user's terms:
    # "the guard Eq(height, 224) on dynamic dimension `height`"; empty for other findings.
    added_guard: str = ""

    @property
    def placed(self) -> bool:
        return self.line is not None

    def place(self, where: Location | None) -> None:
        """Moves the finding to `where` (nothing when None)."""
        if where is None:
            return
        self.file = where.file
        self.line = where.line
        self.column = where.column
        self.end_line = where.end_line
        self.end_column = where.end_column

    def to_json(self) -> dict:
        return {
            "code": self.code,
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "end_line": self.end_line,
            "end_column": self.end_column,
            "message": self.message,
            "origin": self.origin,
            "exception": self.exception,
            "fixes": [fix.to_json() for fix in self.fixes],
            "related": [dataclasses.asdict(entry) for entry in self.related],
        }


def located(code: str, where: Location | None, message: str, **facts) -> Finding:
    """A finding of the export at `where`, or without a place yet."""
    finding = Finding(code, message, **facts)
    finding.place(where)
    return finding


def binding_finding(file: str, name: str | None, code: str, message: str) -> Finding:
    """A finding about the entrypoint, on the module-level statement binding `name`."""
    line = binding_line(file, name) if name else None
    return Finding(code, message, file=file, line=line or 1, origin="entrypoint")


def frame_location(frame) -> Location:
    """Where a traceback frame (or a frame summary of torch's) points."""
    return Location(
        os.path.abspath(frame.filename),
        frame.lineno,
        getattr(frame, "colno", None),
        getattr(frame, "end_lineno", None),
        getattr(frame, "end_colno", None),
    )


def binding_statement(finding: Finding, binding: tuple[str, str] | None):
    """The module-level statement of `binding` ((file, name)), for the caller to place `finding`
    on it or on a part of it; None when there is none, and then the finding is on the file's
    first line (or left where it was, without a binding)."""
    if binding is None:
        return None
    file, name = binding
    node = binding_node(file, name)
    if node is None:
        finding.place(Location(os.path.abspath(file), 1))
    return node
