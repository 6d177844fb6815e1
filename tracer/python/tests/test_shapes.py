"""Traced shapes as the editor writes them: sizes in the user's `Dim` names."""

from __future__ import annotations

from pt2lsp_worker.shapes import render_size

NAMES = {"s77": "batch", "s12": "dx", "s3": "dy"}


def test_traced_sizes_are_written_in_the_users_dim_names():
    assert render_size("s77", NAMES) == "batch"
    assert render_size("64", NAMES) == "64"
    assert render_size("s12 + s3", NAMES) == "dx + dy"
    assert render_size("((s77 + 1)//2)", NAMES) == "(batch + 1)//2"
    assert render_size("(s77 + 1)*(s3 + 1)", NAMES) == "(s77 + 1)*(s3 + 1)".replace("s77", "batch").replace("s3", "dy")


def test_a_symbol_the_user_did_not_name_is_a_size_the_editor_cannot_write():
    # Dim.AUTO, or an unbacked size from data.
    assert render_size("s9 + 1", NAMES) == "?"
    assert render_size("u0", NAMES) == "?"
