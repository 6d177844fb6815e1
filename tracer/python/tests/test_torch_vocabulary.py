"""torch's own vocabulary in the worker's messages: the graph-break registry's code and page, and
the data-dependent friendly forms torch suggests, written with the user's condition.

The texts are torch 2.15's, recorded on CPU (`docs/measured/torch-2.15-failure-kinds.md`); the
tests run without torch.
"""

from __future__ import annotations

from pt2lsp_worker.data_dependent import data_dependent_message
from pt2lsp_worker.graph_breaks import graph_break_code, registry_entry, unsupported_message
from pt2lsp_worker.guard_forms import condition_of, failing_code
from pt2lsp_worker.protocol import MESSAGE_LIMIT

# str(exc) of strict export's `Unsupported` on `if x.sum() > 0:` (torch 2.15).
DATA_DEPENDENT_BRANCHING = """Data-dependent branching
  Explanation: Detected data-dependent branching (e.g. `if my_tensor.sum() > 0:`). \
Dynamo does not support tracing dynamic control flow.

      The branch condition involves a tensor computed as follows:
        # File "/p/m.py", line 35, in forward, code: if x.sum() > 0:
        gt = gt(sum_1, 0)

  Hint: Use `torch.cond` to express dynamic control flow.

  Developer debug context: attempted to jump with TensorVariable()

 For more details about this graph break, please visit: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html
from user code:
   File "/p/m.py", line 35, in forward
    if x.sum() > 0:
"""

# str(exc) of non-strict export's GuardOnDataDependentSymNode on `if n > 2:` after
# `n = x.nonzero().shape[0]` (torch 2.15), and the partial graph it carries.
GUARD_ON_SIZE = """Could not guard on data-dependent expression u0 > 2 (unhinted: u0 > 2).  (Size-like symbols: u0)

consider using data-dependent friendly APIs such as guard_or_false, guard_or_true and statically_known_true. \
If this was caused by Python `not` on a symbolic boolean, use torch.sym_not() or an equivalent comparison instead; \
Python `not` cannot be overloaded outside Dynamo bytecode tracing.
Caused by: (p/m.py:25 in forward)
For more information, run with TORCH_LOGS="dynamic"
"""

PARTIAL_GRAPH = (
    'def forward(self, arg0_1: "f32[5]"):\n'
    "    # File: /p/m.py:24 in forward, code: n = x.nonzero().shape[0]\n"
    '    nonzero: "i64[u0, 1]" = torch.ops.aten.nonzero.default(arg0_1);  arg0_1 = None\n'
    "    \n"
    "    # File: /p/m.py:25 in forward, code: if n > 2:\n"
    '    sym_size_int: "Sym(u0)" = torch.ops.aten.sym_size.int(nonzero, 0);  nonzero = None\n'
    '    gt: "Sym(u0 > 2)" = sym_size_int > 2;  sym_size_int = gt = None\n'
)


class Unsupported(Exception):
    """Stands for dynamo's `Unsupported`: `gb_type` and the message."""

    def __init__(self, message: str, gb_type: str):
        super().__init__(message)
        self.gb_type = gb_type


class Guard(Exception):
    """Stands for torch's GuardOnDataDependentSymNode."""


def test_a_graph_break_keeps_torchs_code_and_links_its_page():
    exc = Unsupported(DATA_DEPENDENT_BRANCHING, "Data-dependent branching")
    link = "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html"
    assert registry_entry(exc) == ("GB0170", link)
    assert graph_break_code(exc) == "PT101"
    message = unsupported_message(exc)
    assert message.startswith("Data-dependent branching: Detected data-dependent branching"), message
    assert message.endswith(f"(torch GB0170: {link})"), message


def test_a_long_explanation_is_shortened_but_never_torchs_code():
    exc = Unsupported(
        DATA_DEPENDENT_BRANCHING.replace("Dynamo does not", "x " * 400 + "Dynamo does not"), "Data-dependent branching"
    )
    message = unsupported_message(exc)
    assert len(message) <= MESSAGE_LIMIT
    assert message.endswith("gb0170.html)") and "…" in message, message


def test_a_graph_break_without_a_page_has_no_code():
    # Without the link, and without torch to look `gb_type` up, there is nothing to cite.
    exc = Unsupported("Some break\n  Explanation: because.", "Some break")
    entry = registry_entry(exc)
    message = unsupported_message(exc)
    if entry is None:
        assert message == "Some break: because.", message
    else:
        assert message.endswith(f"(torch {entry[0]}: {entry[1]})"), message


def test_the_users_condition_is_read_from_their_line():
    assert failing_code(PARTIAL_GRAPH) == "if n > 2:"
    assert condition_of("if n > 2:") == "n > 2"
    assert condition_of("elif n >= lo and n < hi:  # keep") == "n >= lo and n < hi"
    assert condition_of("while count > 0:") == "count > 0"
    assert condition_of("assert v > 0.5, 'too small'") == "v > 0.5"
    assert condition_of("y = x[: n]") is None
    assert condition_of("if broken(:") is None
    assert condition_of(None) is None


def test_a_data_dependent_size_offers_torchs_friendly_forms_with_the_users_condition():
    message = data_dependent_message(Guard(GUARD_ON_SIZE), "PT103", PARTIAL_GRAPH)
    assert "Could not guard on data-dependent expression u0 > 2" in message
    assert "`guard_or_false(n > 2)`" in message, message
    assert "`torch._check(n > 2)`" in message, message
    # Strict export attaches no graph: the user's line, read where the guard fired, says it.
    message = data_dependent_message(Guard(GUARD_ON_SIZE), "PT102", "", source_line="        if v > 0.5:\n")
    assert "`guard_or_false(v > 0.5)`" in message, message


def test_a_branch_on_a_tensor_gets_no_guard_or_false():
    # `if x.sum() > 0:` tests a tensor: guard_or_false takes a symbolic boolean, not a tensor.
    message = data_dependent_message(Guard(GUARD_ON_SIZE), "PT101", PARTIAL_GRAPH)
    assert "guard_or_false" not in message and "torch.cond" in message, message
    # Where torch does not suggest them, neither does pt2lsp.
    plain = GUARD_ON_SIZE.replace("guard_or_false, ", "")
    assert "guard_or_false(" not in data_dependent_message(Guard(plain), "PT103", PARTIAL_GRAPH)
