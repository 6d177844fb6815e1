"""Exporter messages made short: boilerplate dropped, a few lines kept, clipped to the limit."""

from __future__ import annotations

import re

from .protocol import MESSAGE_LIMIT

_BOILERPLATE = (
    "The error above occurred when calling torch.export",
    "For more information",
    "consider using data-dependent friendly",
    "Caused by:",
    "For extended logs",
    "If you suspect",
    "For more debugging help",
    "For C++ stack trace",
    "from user code:",
    "Set TORCHDYNAMO_VERBOSE",
    "User Stack",
    "User stack",
    "The following call raised this error",
    "Hint:",
    "For more details about this graph break",
    "Developer debug context",
)


def trim(text: str, max_lines: int = 3) -> str:
    kept = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            if kept:
                break
            continue
        if stripped.startswith(_BOILERPLATE):
            break
        kept.append(stripped)
        if len(kept) >= max_lines:
            break
    out = " ".join(kept)
    out = re.sub(r"\s*For more information about this error, see: \S+", "", out)
    return clip(out)


def first_sentence(text: str) -> str:
    line = first_lines(text, 1)
    match = re.match(r"(.+?[.!?])(\s|$)", line)
    return match.group(1) if match else line


def first_lines(text: str, count: int) -> str:
    return trim(text, count)


def clip(text: str) -> str:
    text = text.strip()
    if len(text) > MESSAGE_LIMIT:
        text = text[: MESSAGE_LIMIT - 1].rstrip() + "…"
    return text
