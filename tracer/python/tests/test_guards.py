"""Guards on declared dimensions: the `Dim`s a spec declares, as the exporter names their sources,
and guards said in those names; no torch needed."""

from __future__ import annotations

import os

from pt2lsp_worker.constraints import guard_clause, guard_message, parse_suggested_fixes, restricts
from pt2lsp_worker.entrypoint import Target
from pt2lsp_worker.library_conditions import enclosing_conditions, user_choice
from pt2lsp_worker.locations import installed_path
from pt2lsp_worker.spec import declared_sources, flat_input_names, in_input_names, with_declared_sources


class Tensor:
    """Stands in for a tensor: the spec walk reads only `ndim` and `shape`."""

    def __init__(self, *shape: int) -> None:
        self.shape = shape
        self.ndim = len(shape)


class Dim:
    def __init__(self, name: str) -> None:
        self.__name__ = name


class Model:
    def forward(self, x, pair, extra=None):
        return x


def target(spec, *args, **kwargs) -> Target:
    built = Target()
    built.model = Model()
    built.args = args
    built.kwargs = kwargs
    built.dynamic_shapes = spec
    return built


def test_each_named_dim_is_found_at_its_source_in_dict_and_tuple_specs():
    pair = (Tensor(2, 3), Tensor(4, 5))
    spec = {"x": {0: Dim("batch"), 2: Dim("height")}, "pair": ({1: Dim("cols")}, None)}
    assert declared_sources(target(spec, Tensor(2, 3, 32), pair)) == {
        "L['x'].size()[0]": "batch",
        "L['x'].size()[2]": "height",
        "L['pair'][0].size()[1]": "cols",
    }
    # A tuple spec follows forward's parameters; a per-dimension tuple for a tensor.
    spec = ((Dim("batch"), None), None)
    assert declared_sources(target(spec, Tensor(2, 3), pair)) == {"L['x'].size()[0]": "batch"}


def test_dims_without_a_users_name_are_left_out():
    # Dim.AUTO / Dim.DYNAMIC have no __name__; a derived dim's name is an expression.
    spec = {"x": {0: object(), 1: Dim("2*half")}, "pair": None}
    assert declared_sources(target(spec, Tensor(2, 4), None)) == {}
    assert declared_sources(target(None, Tensor(2, 4), None)) == {}


def test_a_specialised_dim_named_without_a_source_gets_its_declared_one():
    spec = {"x": {2: Dim("height"), 3: Dim("width")}}
    dims = {"?height": "height", "L['x'].size()[3]": "width"}
    assert with_declared_sources(dims, target(spec, Tensor(1, 3, 8, 8), None)) == {
        "L['x'].size()[2]": "height",
        "L['x'].size()[3]": "width",
    }


def test_a_fix_that_would_make_a_dynamic_dim_static_says_so():
    fixes = parse_suggested_fixes("Suggested fixes:\n  height = 224\n  width = Dim('width', min=33, max=512)\n")
    message = guard_message("installed code (timm/layers/patch_embed.py:124) adds", ["the guard A", "the guard B"], fixes)
    assert message == (
        "installed code (timm/layers/patch_embed.py:124) adds the guard A; and the guard B; "
        "suggested fix: height = 224 (which makes `height` static); width = Dim('width', min=33, max=512)"
    )


def test_an_installed_file_is_named_as_its_import_path():
    site = os.path.join(os.sep, "venv", "lib", "python3.11", "site-packages")
    assert installed_path(os.path.join(site, "timm", "layers", "patch_embed.py")) == "timm/layers/patch_embed.py"
    assert installed_path(os.path.join(os.sep, "work", "model.py")) == os.path.join(os.sep, "work", "model.py")


LIBRARY = """\
class PatchEmbed:
    def forward(self, x, interpolate_pos_encoding=False):
        B, C, H, W = x.shape
        if self.img_size is not None:
            if self.strict_img_size:
                _assert(H == self.img_size[0], "height")
            elif not self.dynamic_img_pad:
                _assert(H % self.patch_size[0] == 0, "divisible")
        for block in self.blocks:
            if interpolate_pos_encoding:
                x = self.interpolate(x)
            else:
                x = x + self.position_embeddings
        return x
"""


def library_file(tmp_path) -> str:
    path = tmp_path / "site-packages" / "lib" / "patch_embed.py"
    path.parent.mkdir(parents=True)
    path.write_text(LIBRARY)
    return str(path)


def test_the_conditions_around_a_library_line_are_read_with_their_branch(tmp_path):
    path = library_file(tmp_path)
    conditions = [(text, in_body) for _, in_body, text in enclosing_conditions(path, 6)]
    assert conditions == [("self.img_size is not None", True), ("self.strict_img_size", True)]
    conditions = [(text, in_body) for _, in_body, text in enclosing_conditions(path, 8)]
    assert conditions == [
        ("self.img_size is not None", True),
        ("self.strict_img_size", False),
        ("not self.dynamic_img_pad", True),
    ]
    # Through a loop, into the else branch.
    assert [(text, in_body) for _, in_body, text in enclosing_conditions(path, 13)] == [("interpolate_pos_encoding", False)]
    assert enclosing_conditions(path, 3) == []


def test_a_condition_the_user_chooses_is_said_with_the_choice_that_avoids_the_guard(tmp_path):
    path = library_file(tmp_path)
    said = user_choice(path, 13, {"pixel_values", "interpolate_pos_encoding"})
    assert "with `interpolate_pos_encoding=True` in `example_kwargs` it does not" in said, said
    assert "runs only when `interpolate_pos_encoding` is false" in said, said
    said = user_choice(path, 6, set())
    assert "runs only when `self.strict_img_size`:" in said and "set `strict_img_size` to False" in said, said
    # `not self.dynamic_img_pad` guards line 8: the attribute set to True avoids it.
    assert "set `dynamic_img_pad` to True" in user_choice(path, 8, set())
    # A parameter of the library's function that the model's forward does not take is no choice.
    assert user_choice(path, 13, {"pixel_values"}) == ""


def test_a_long_list_of_guards_is_counted_past_the_first_two():
    message = guard_message("this code adds", ["the guard A", "the guard B", "the guard C", "the guard D"], [])
    assert message == "this code adds the guard A; and the guard B; and 2 more guards"


def test_a_guard_on_data_dependent_sizes_is_not_said_to_be_on_the_violated_dim():
    dims = {"L['x'].size()[0]": "batch"}
    # draft_export's guard over unbacked sizes has no source: it is not about `batch`.
    assert guard_clause("Ne(Max(u0, u1), 0)", {}, dims, []) is None
    assert guard_clause("Ne(u1, 1)", {"u1": "L['x'].size()[0]"}, dims, []) is not None
    # Strict export's sources for the one violated dim still find it.
    clause, _ = guard_clause("Ne(s0, 1)", {"s0": "L['flat_args'][0].size()[0]"}, dims, [])
    assert clause.endswith("on dynamic dimension `batch`")


def test_strict_exports_numbered_inputs_are_named_as_the_violation_names_them():
    # As torch 2.15 numbers them (measured): the leaves of (args, kwargs), a None without one.
    pair = (Tensor(2), Tensor(6))
    built = target(None, Tensor(2, 3), pair, extra=Tensor(3, 8))
    assert flat_input_names(built) == ["L['x']", "L['pair'][0]", "L['pair'][1]", "L['extra']"]
    assert flat_input_names(target(None, Tensor(2, 3), (None, Tensor(6)))) == ["L['x']", "L['pair'][1]"]
    sources = {"s7": "L['flat_args'][3].size()[1]", "s6": "L['flat_args'][0].size()[0]"}
    assert in_input_names(sources, built) == {"s7": "L['extra'].size()[1]", "s6": "L['x'].size()[0]"}
    # A container torch's pytree flattens in its own way is not numbered: sources stay as they are.
    from collections import OrderedDict

    odd = target(None, Tensor(2, 3), OrderedDict(a=Tensor(2)))
    assert flat_input_names(odd) is None
    assert in_input_names(sources, odd) == sources


def test_a_guard_on_a_dimension_torch_does_not_list_as_violated_is_not_a_violation():
    dims = {"L['x'].size()[0]": "batch"}
    built = target(None, Tensor(2, 8, 64), None)
    # Strict export's guard on the length (a `Dim.AUTO`, which allows it): once named, it is not
    # about `batch` (draft_export lists it beside the violated one, measured with torch 2.15).
    on_length = in_input_names({"s37": "L['flat_args'][0].size()[2]"}, built)
    assert guard_clause("Eq(Mod(s37, 2), 0)", on_length, dims, []) is None
    on_batch = in_input_names({"s6": "L['flat_args'][0].size()[0]"}, built)
    clause, _ = guard_clause("s6 <= 4", on_batch, dims, [])
    assert clause == "the guard batch <= 4 on dynamic dimension `batch`"


def test_a_relation_the_example_satisfies_at_every_size_is_not_a_violated_guard():
    sources = {"s30": "L['src_seq'].size()[0]", "s59": "L['trg_seq'].size()[0]", "s1": "L['src_seq'].size()[1]"}
    violated = {"L['src_seq'].size()[1]"}
    example = {"s30": 4, "s59": 4, "s1": 37}
    # The encoder's and decoder's batch equal, written over the length (the seq2seq Transformer
    # of attention-is-all-you-need-pytorch, torch 2.15): true at any length.
    assert not restricts("Eq(512*s30*s1, 512*s59*s1)", sources, violated, example)
    # A bound, a multiple, a relation to another size: each cuts the length's range.
    assert restricts("s1 <= 200", sources, violated, example)
    assert restricts("Eq(Mod(s1, 4), 0)", sources, violated, {**example, "s1": 36})
    assert restricts("Eq(s1, s30)", sources, violated, example)
    assert restricts("Eq((s1 - 1)//2, s30)", sources, violated, example)
    # Two inputs declared with the same `Dim` are one size: their equality cuts nothing.
    both = {"s1": "L['src_seq'].size()[1]", "s94": "L['src_mark'].size()[1]"}
    together = violated | {"L['src_mark'].size()[1]"}
    assert not restricts("Eq(s1, s94)", both, together, {"s1": 37, "s94": 37})
    assert restricts("Eq(s1, s94)", both, violated, {"s1": 37, "s94": 37})
    # What cannot be told is kept: no example size for another symbol, a form sympy cannot read.
    assert restricts("Eq(512*s30*s1, 512*s59*s1)", sources, violated, {"s1": 37})
    assert restricts("Eq(FloorToInt(s1), 3) and", sources, violated, example)
