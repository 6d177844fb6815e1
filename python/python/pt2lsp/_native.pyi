"""Types of ``pt2lsp._native``, the extension module behind the ``pt2lsp`` API."""

from collections.abc import Iterable
from os import PathLike
from typing import Literal, TypedDict, final

from typing_extensions import NotRequired

__all__ = ["__version__", "Diagnostic", "Fix", "Edit", "Related", "check", "check_paths", "main"]

__version__: str

_Severity = Literal["error", "warning", "info"]
_Applicability = Literal["safe", "unsafe", "display-only"]
_StrPath = str | PathLike[str]

class _EditDict(TypedDict):
    cell: NotRequired[int]
    line: int
    column: int
    end_line: int
    end_column: int
    content: str

class _FixDict(TypedDict):
    title: str
    applicability: _Applicability
    edits: list[_EditDict]

class _RelatedDict(TypedDict):
    file: str
    line: int
    column: int
    message: str

class _DiagnosticDict(TypedDict):
    file: str
    cell: NotRequired[int]
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    severity: _Severity
    message: str
    source: Literal["static"]
    fix: NotRequired[_FixDict]
    related: list[_RelatedDict]

@final
class Edit:
    """Replace the text from (line, column) up to, not including, (end_line, end_column)."""

    @property
    def cell(self) -> int | None:
        """In a notebook, the cell (from 1) the edit starts in; lines are then the cell's."""
    @property
    def line(self) -> int: ...
    @property
    def column(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def end_column(self) -> int: ...
    @property
    def content(self) -> str: ...
    def to_dict(self) -> _EditDict: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Fix:
    """Edits that together fix one diagnostic."""

    @property
    def title(self) -> str: ...
    @property
    def applicability(self) -> _Applicability:
        """``safe``: ``pt2lsp check --fix`` applies it; ``unsafe``: only with
        ``--unsafe-fixes``; ``display-only``: shown, never applied."""
    @property
    def edits(self) -> list[Edit]: ...
    def to_dict(self) -> _FixDict: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Related:
    """Another place that explains a diagnostic: the entrypoint that exports the model, a call
    on the way to the problem, or a frame inside an installed library. 1-based line and
    column (in characters)."""

    @property
    def file(self) -> str: ...
    @property
    def line(self) -> int: ...
    @property
    def column(self) -> int: ...
    @property
    def message(self) -> str: ...
    def to_dict(self) -> _RelatedDict: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Diagnostic:
    """One problem ``torch.export`` would have, at one place of one file.

    Lines and columns are 1-based, columns count characters, and the end is exclusive, as in
    ``pt2lsp check --format json``.
    """

    @property
    def file(self) -> str: ...
    @property
    def cell(self) -> int | None:
        """In a notebook, the cell (from 1, every cell counted as editors number them); the
        lines are then the cell's."""
    @property
    def line(self) -> int: ...
    @property
    def column(self) -> int: ...
    @property
    def end_line(self) -> int: ...
    @property
    def end_column(self) -> int: ...
    @property
    def code(self) -> str:
        """The rule's code, ``PT101``; ``pt2lsp rule PT101`` explains it."""
    @property
    def name(self) -> str:
        """The rule's name, ``data-dependent-branch``."""
    @property
    def severity(self) -> _Severity: ...
    @property
    def message(self) -> str: ...
    @property
    def source(self) -> Literal["static"]: ...
    @property
    def fix(self) -> Fix | None: ...
    @property
    def related(self) -> list[Related]:
        """The places that explain it, entrypoint first; empty when there are none."""
    def to_dict(self) -> _DiagnosticDict:
        """The diagnostic as ``pt2lsp check --format json`` writes it (no ``fix`` key when
        there is no fix)."""
    def __eq__(self, value: object, /) -> bool: ...
    def __hash__(self) -> int: ...

def check(
    source: str,
    path: str = "<string>",
    strict: bool = False,
    select: str | Iterable[str] | None = None,
    ignore: str | Iterable[str] | None = None,
) -> list[Diagnostic]:
    """Check one file's source on its own: no configuration file is read and no other file is
    consulted; ``path`` only names the file in the diagnostics.

    ``strict``: check for ``torch.export.export(..., strict=True)``. ``select`` and ``ignore``
    are rule codes or prefixes (``"PT1"``, ``["PT101", "PT2"]``, ``"PT1,PT2"``); no ``select``
    runs every rule.

    Raises:
        ValueError: an unknown rule selector.
        TypeError: an argument of the wrong type.
    """

def check_paths(
    paths: _StrPath | Iterable[_StrPath],
    *,
    strict: bool | None = None,
    select: str | Iterable[str] | None = None,
    ignore: str | Iterable[str] | None = None,
    exclude: str | Iterable[str] | None = None,
    config: _StrPath | None = None,
    isolated: bool = False,
) -> list[Diagnostic]:
    """Check files and directories as ``pt2lsp check PATH...`` does: the walk (honouring
    .gitignore and ``exclude``), the nearest pyproject.toml's ``[tool.pt2lsp]`` (or
    ``config``; none with ``isolated``), and the analysis across the files found. The options
    override the configuration as the command's flags do: ``select`` replaces its select and
    ignore, ``ignore`` and ``exclude`` add to it, ``strict`` overrides it when not None.

    Diagnostics are sorted by file, then position; ``file`` is relative to the current
    directory when under it.

    Raises:
        OSError: a path that does not exist or a file that cannot be read (FileNotFoundError
            and friends when the system says why).
        ValueError: an unknown rule selector or a broken configuration file.
        TypeError: an argument of the wrong type.
    """

def main(args: list[str]) -> int:
    """Run the ``pt2lsp`` command in this process with ``args`` (the program name first) and
    return its exit code: 0 no error, 1 errors found, 2 pt2lsp could not do what was asked."""
