"""Graph breaks of strict export (dynamo's `Unsupported`): their rule and a short message."""

from __future__ import annotations

from .text import clip, first_lines, trim


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


def unsupported_message(exc: BaseException) -> str:
    kind = str(getattr(exc, "gb_type", "") or "").strip()
    text = str(exc)
    explanation = None
    for line in text.splitlines():
        if line.strip().startswith("Explanation:"):
            explanation = line.strip()[len("Explanation:") :].strip()
            break
    if not kind:
        return trim(text)
    return clip(f"{kind}: {explanation}" if explanation else kind)
