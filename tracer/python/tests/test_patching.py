"""Wrapping a function for one step: the wrapper sees every call, the original comes back after."""

from __future__ import annotations

import textwrap

import pytest

from pt2lsp_worker.patching import patched


def test_the_wrapper_runs_for_the_body_and_the_original_comes_back_even_after_an_error():
    seen = []

    def wrap(original):
        def dedent(text):
            seen.append(text)
            return original(text)

        return dedent

    original = textwrap.dedent
    with pytest.raises(ZeroDivisionError), patched("textwrap", "dedent", wrap):
        assert textwrap.dedent("  a") == "a"
        _ = 1 / 0
    assert seen == ["  a"]
    assert textwrap.dedent is original


def test_a_missing_module_or_attribute_runs_the_body_unwrapped():
    ran = []
    with patched("no_such_module_here", "f", lambda original: None):
        ran.append("module")
    with patched("textwrap", "no_such_function", lambda original: None):
        ran.append("attribute")
    assert ran == ["module", "attribute"]
    assert not hasattr(textwrap, "no_such_function")
