"""Guards written as Python instead of sympy (no torch needed)."""

from __future__ import annotations

from pt2lsp_worker.expressions import as_python


def test_comparisons_and_modulo_are_python_operators():
    assert as_python("Eq(height, 224)") == "height == 224"
    assert as_python("Ne(Mod(height, 16), 0)") == "height % 16 != 0"
    assert as_python("Eq(Mod(960*s6, 32*s11), 0)") == "(960*s6) % (32*s11) == 0"
    assert as_python("Eq(PythonMod(seq, 8), 0)") == "seq % 8 == 0"


def test_doubled_parentheses_around_floor_divisions_go():
    assert as_python("Ne((((width - 1)//32)) + 1, 1)") == "((width - 1)//32) + 1 != 1"
    assert as_python("Ne(((width//16))*((height//16)), (height//16))") == "(width//16)*(height//16) != height//16"


def test_max_min_and_abs_are_builtins():
    assert as_python("4*Min(300, u0) + 4*Min(300, u1) > 4000") == "4*min(300, u0) + 4*min(300, u1) > 4000"
    assert as_python("Max(1, batch) >= 2") == "max(1, batch) >= 2"


def test_what_is_already_python_or_unreadable_stays():
    assert as_python("seq <= 64") == "seq <= 64"
    assert as_python("u0 >= 0") == "u0 >= 0"
    assert as_python("Eq(height") == "Eq(height"
    assert as_python("Eq(a, b, c)") == "Eq(a, b, c)"
    assert as_python("(((width - 1)//32)) + 1 < 4") == "((width - 1)//32) + 1 < 4"
