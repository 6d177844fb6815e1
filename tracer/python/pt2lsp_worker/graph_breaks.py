"""Graph breaks of strict export (dynamo's `Unsupported`): their rule, a short message, and
torch's own code for the break (`GB0170`) with the page of torch's graph-break registry."""

from __future__ import annotations

import re

from .protocol import MESSAGE_LIMIT
from .text import clip, first_lines, trim

# The link torch 2.15 appends to every registered graph break's message:
# `For more details about this graph break, please visit: https://…/gb/gb0170.html`.
_REGISTRY_LINK = re.compile(r"https://\S+/gb/gb(\d+)\.html")


def graph_break_code(exc: BaseException) -> str:
    kind = str(getattr(exc, "gb_type", "") or first_lines(str(exc), 1))
    if "Data-dependent branching" in kind or "generic_jump" in kind:
        return "PT101"
    if "item()" in kind or "tolist()" in kind or "scalar" in kind.lower():
        return "PT102"
    if "Dynamic shape operator" in kind:
        return "PT103"
    if "graph_break()" in kind:
        return "PT203"
    if "fake tensors" in kind or "fake impl" in kind:
        return "PT301"
    if "marked as skipped" in kind or "Unsupported function call" in kind or "builtin" in kind.lower():
        return "PT202"
    if "numpy" in kind.lower():
        return "PT201"
    return "PT202"


def registry_entry(exc: BaseException) -> tuple[str, str] | None:
    """torch's registry code of a graph break and the page that explains it
    (`("GB0170", "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html")`), from
    the link in its message, else from torch's registry by its `gb_type`; None when torch has
    no page for it."""
    match = _REGISTRY_LINK.search(str(exc))
    if match is None:
        gb_type = getattr(exc, "gb_type", None)
        if not gb_type:
            return None
        try:
            from torch._dynamo.exc import get_gbid_documentation_link
        except ImportError:
            return None
        try:
            link = get_gbid_documentation_link(str(gb_type))
        except Exception:  # noqa: BLE001 - a registry torch cannot read has no page to give
            return None
        match = _REGISTRY_LINK.search(link or "")
        if match is None:
            return None
    return f"GB{match.group(1)}", match.group(0)


def unsupported_message(exc: BaseException) -> str:
    """`<graph break kind>: <torch's explanation> (torch GB0170: <its page>)`, within the message
    limit: the explanation is what gets shortened, never torch's code and link."""
    kind = str(getattr(exc, "gb_type", "") or "").strip()
    text = str(exc)
    explanation = None
    for line in text.splitlines():
        if line.strip().startswith("Explanation:"):
            explanation = line.strip()[len("Explanation:") :].strip()
            break
    if not kind:
        return trim(text)
    head = f"{kind}: {explanation}" if explanation else kind
    entry = registry_entry(exc)
    if entry is None:
        return clip(head)
    code, link = entry
    suffix = f" (torch {code}: {link})"
    room = MESSAGE_LIMIT - len(suffix)
    head = head.strip()
    if len(head) > room:
        head = head[: room - 1].rstrip() + "…"
    return head + suffix
