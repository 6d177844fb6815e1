"""Constraint violations: torch's `Constraints violated` message read into a sentence, the dims
it names and its `Suggested fixes:` as data for the server's code actions."""

from __future__ import annotations

import re

from .expressions import as_python
from .findings import SuggestedFix
from .patching import patched
from .text import clip, first_lines

_BULLET_DIM = re.compile(r"\b([A-Za-z_]\w*) = (L\[[^\]]+\](?:\.size\(\)\[\d+\])?)")


def parse_suggested_fixes(text: str) -> list[SuggestedFix]:
    """The `Suggested fixes:` block of a constraint violation, as data for a later code action."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "Suggested fixes:")
    except StopIteration:
        return []
    fixes = []
    for line in lines[start + 1 :]:
        stripped = line.strip()
        if not stripped or not line.startswith(" "):
            break
        match = re.match(r"^([A-Za-z_]\w*)\s*=\s*(.+)$", stripped)
        if not match:
            continue
        dim, value = match.group(1), match.group(2).strip()
        call = re.match(r"^Dim\(\s*['\"]([^'\"]+)['\"]\s*(?:,(.*))?\)$", value)
        if call:
            fix = SuggestedFix(dim, stripped, "range")
            for key, number in re.findall(r"\b(min|max)\s*=\s*(-?\d+|oo|-oo|int_oo)", call.group(2) or ""):
                if number.lstrip("-").isdigit():
                    setattr(fix, key, int(number))
        elif re.match(r"^-?\d+$", value):
            fix = SuggestedFix(dim, stripped, "constant", value=int(value))
        elif re.match(r"^[A-Za-z_]\w*$", value):
            fix = SuggestedFix(dim, stripped, "equal", to=value)
        else:
            roots = sorted(set(re.findall(r"[A-Za-z_]\w*", value)))
            fix = SuggestedFix(dim, stripped, "derived", expr=value, root=roots[0] if roots else None)
        fixes.append(fix)
    return fixes


_NOT_ALL_VALUES = re.compile(
    r"^Not all values of ([A-Za-z_]\w*) = \S+ in the specified range (.*?)satisfy the generated guard (.*?)\.?$"
)


def in_user_terms(text: str, names: dict[str, str]) -> str:
    """`text` with each of `names`' keys, a source (`L['x'].size()[0]`) or a symbol (`s27`),
    replaced by the user's `Dim` name."""
    for key in sorted(names, key=len, reverse=True):
        if re.fullmatch(r"[su]\d+", key):
            text = re.sub(rf"\b{key}\b", names[key], text)
        else:
            text = text.replace(key, names[key])
    return text


def symbol_names(symbol_to_sources: dict[str, str], dims: dict[str, str]) -> dict[str, str]:
    """{symbol: Dim name} of a guard's symbols whose source (`L['x'].size()[0]`) a violated
    dimension names."""
    return {symbol: dims[source] for symbol, source in symbol_to_sources.items() if source in dims}


def _bullet_in_user_terms(bullet: str, dims: dict[str, str]) -> str:
    """torch's `Not all values of batch = L['x'].size()[0] in the specified range satisfy the
    generated guard ((4*L['x'].size()[0]) % 8) == 0` as `batch` and its guard in `batch`."""
    # torch's advice for `mark_dynamic` and `Dim.DYNAMIC`, which the user did not write.
    # A sentence ends at a period followed by a space or the end (`Dim.STATIC` is no end).
    bullet = re.sub(r"\s*If you're using (?:mark_dynamic|Dim\.DYNAMIC).*?\.(?=\s|$)", "", bullet).strip()
    match = _NOT_ALL_VALUES.match(bullet)
    if match is None:
        return in_user_terms(bullet, dims)
    name, bounds, guard = match.groups()
    return f"not every value of `{name}` in its declared range {bounds}satisfies the guard {in_user_terms(guard, dims)}"


# The symbols torch makes for sizes read from data (`u0`), which no input dimension is.
UNBACKED = re.compile(r"\b(?:u|zuf|zf)\d+\b")


def guard_clause(
    expr: str, symbol_to_sources: dict[str, str], dims: dict[str, str], fixes: list[SuggestedFix]
) -> tuple[str, list[SuggestedFix]] | None:
    """ "the guard … on dynamic dimension `d`" for a guard on violated dimensions (`dims`: {source:
    Dim name}), with the suggested fixes about them; None for a guard on a dimension the
    violation is not about (a Dim.AUTO one)."""
    names = sorted({dims[source] for source in symbol_to_sources.values() if source in dims})
    numbered = any(source.startswith("L['flat_args']") for source in symbol_to_sources.values())
    if dims and not names and len(set(dims.values())) == 1 and numbered and not UNBACKED.search(expr):
        # One dim violated, and strict export's sources (L['flat_args'][0]) could not be named as
        # the violation names them (`spec.in_input_names`): the guard is taken to be about it. A
        # guard over data-dependent sizes (`max(u0, u1) != 0`), which have no source, is not; nor
        # is one on a named input's other dimension, which torch does not list.
        names = sorted(set(dims.values()))
    if dims and not names:
        return None
    named = on_dimensions(names or sorted(set(symbol_to_sources.values())))
    # The guard in the user's `Dim` names (`Ne(16*seq, 32)`, not `Ne(16*s27, 32)`).
    guard = as_python(in_user_terms(expr, symbol_names(symbol_to_sources, dims)))
    relevant = [fix for fix in fixes if fix.dim in names or fix.root in names or not names]
    # A derived fix (`b = 2*_b`) comes with its root's definition (`_b = Dim(...)`).
    roots = {fix.root for fix in relevant if fix.kind == "derived"}
    relevant += [fix for fix in fixes if fix.dim in roots and fix not in relevant]
    return f"the guard {guard} {named}", relevant


# Sizes of a violated dimension a guard is tried at: the smallest ones (a parity or a multiple
# shows there), around the example's, and large ones (a bound shows there).
_SMALL_SIZES = range(2, 10)
_LARGE_SIZES = (1_000, 1_001, 65_536, 1_000_003)


def restricts(expr: str, symbols: dict[str, str], violated: set[str], hints: dict[str, int]) -> bool:
    """Whether guard `expr` cuts the range of a violated dimension: false at some size of one of
    them (`symbols`: {symbol: source}; `violated`: the sources torch lists), while every other
    size keeps its example's value (`hints`: {symbol: size}). A relation that the example's other
    sizes satisfy at every size of the dimension (`Eq(512*s30*s1, 512*s59*s1)`, the encoder's and
    the decoder's batch equal) is not a guard torch lists as violated. True when the guard cannot
    be evaluated: only a guard known to leave the dimension free is dropped."""
    try:
        import sympy
    except ImportError:
        return True
    on = [symbol for symbol, source in symbols.items() if source in violated]
    others = {symbol: hint for symbol, hint in hints.items() if symbol not in on}
    if not on or any(symbol not in others for symbol in symbols if symbol not in on):
        return True
    try:
        guard = sympy.sympify(expr, locals={name: sympy.Symbol(name, integer=True, positive=True) for name in symbols})
        guard = guard.subs({sympy.Symbol(name, integer=True, positive=True): value for name, value in others.items()})
        for symbol in on:
            example = hints.get(symbol)
            near = range(example - 3, example + 4) if example else range(0)
            for size in (*_SMALL_SIZES, *near, *_LARGE_SIZES):
                if size < 2:
                    continue
                held = guard.subs({sympy.Symbol(name, integer=True, positive=True): size for name in on})
                if held is sympy.false or held is False:
                    return True
                if held is not sympy.true and held is not True:
                    return True
    except Exception:  # noqa: BLE001 - torch's printing of a guard sympy cannot read back
        return True
    return False


def on_dimensions(names: list[str]) -> str:
    """ "on dynamic dimension `a`" or "on dynamic dimensions `a` and `b`"."""
    quoted = [name if name.startswith("L[") else f"`{name}`" for name in names]
    if len(quoted) == 1:
        return f"on dynamic dimension {quoted[0]}"
    return f"on dynamic dimensions {', '.join(quoted[:-1])} and {quoted[-1]}"


# Guards named in one message; the rest are counted (a conv stack adds one per layer).
GUARDS_SHOWN = 2


def guard_message(who: str, clauses: list[str], fixes: list[SuggestedFix], note: str = "") -> str:
    """ "{who} the guard … on dynamic dimension …[; {note}]; suggested fix: …", a fix that would
    make a declared dynamic dimension static shown as what it is."""
    shown = clauses if len(clauses) <= GUARDS_SHOWN else clauses[:GUARDS_SHOWN] + [f"{len(clauses) - GUARDS_SHOWN} more guards"]
    message = f"{who} " + "; and ".join(shown)
    if note:
        message += f"; {note}"
    if fixes:
        message += "; suggested fix: " + "; ".join(described(fix) for fix in fixes)
    return clip(message)


def described(fix: SuggestedFix) -> str:
    """A suggested fix as the message shows it: a constant says that it makes the dim static."""
    if fix.kind == "constant":
        return f"{fix.text} (which makes `{fix.dim}` static)"
    return fix.text


def parse_constraint_violation(text: str) -> tuple[str, list[SuggestedFix], dict[str, str]]:
    """(message, suggested fixes, {source: dim name}) of a `Constraints violated` error."""
    lines = [line for line in text.splitlines()]
    header = next((line.strip() for line in lines if line.strip().startswith("Constraints violated")), None)
    bullets = [line.strip()[2:] for line in lines if line.strip().startswith("- ")]
    dims: dict[str, str] = {}
    for bullet in bullets:
        for name, source in _BULLET_DIM.findall(bullet):
            dims.setdefault(source, name)
        # "You marked b as dynamic but your code specialized it to be a constant (8)" names no
        # source; the header's list of dims still says which dim it is.
        for name in re.findall(r"You marked ([A-Za-z_]\w*) as dynamic", bullet):
            dims.setdefault(f"?{name}", name)
    fixes = parse_suggested_fixes(text)
    if header:
        header = re.sub(r"\s*For more information, run with TORCH_LOGS=\S+", "", header)
    parts = [header or first_lines(text, 1)]
    if bullets:
        first = _bullet_in_user_terms(bullets[0], dims)
        parts.append(first + (f" (and {len(bullets) - 1} more)" if len(bullets) > 1 else ""))
    if fixes:
        parts.append("suggested fix: " + "; ".join(described(fix) for fix in fixes))
    return clip(" ".join(parts)), fixes, dims


def capture_constraint_messages(messages: list[str]):
    """draft_export retries a constraint violation with Dim.AUTO and forgets the message (and its
    `Suggested fixes`); keep a copy by wrapping the `_export` it calls."""

    def wrap(original):
        def wrapped(*args, **kwargs):
            try:
                return original(*args, **kwargs)
            except Exception as exc:
                if getattr(getattr(exc, "error_type", None), "name", None) == "CONSTRAINT_VIOLATION":
                    messages.append(str(exc))
                raise

        return wrapped

    return patched("torch.export._draft_export", "_export", wrap)
