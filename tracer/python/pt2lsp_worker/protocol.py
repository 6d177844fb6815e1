"""The protocol's version and the one list of rule codes the worker reports, with their limits."""

from __future__ import annotations

PROTOCOL = 1


# Every rule code this worker reports, with the rule's name: the one list of them. A Rust test
# (tracer/src/worker.rs) checks it against the analyzer's `Rule` table, and a Python test
# (tracer/python/tests) checks that the worker names no code outside it.
RULES = {
    "PT101": "data-dependent-branch",
    "PT102": "data-dependent-scalar",
    "PT103": "data-dependent-shape",
    "PT201": "tensor-to-numpy",
    "PT202": "untraceable-call",
    "PT203": "explicit-graph-break",
    "PT204": "compiled-module-export",
    "PT301": "missing-fake-kernel",
    "PT302": "mismatched-fake-kernel",
    "PT401": "dynamic-dim-guard",
    "PT403": "invalid-dynamic-shapes",
    "PT404": "unregistered-input-type",
    "PT405": "specializing-example-size",
    "PT406": "dimension-made-static",
    "PT501": "export-failed",
    "PT502": "worker-crash",
    "PT503": "entrypoint-error",
    "PT601": "baked-in-value",
    "PT701": "non-core-aten-op",
    "PT702": "unsaveable-program",
    "PT703": "onnx-unsupported-op",
    "PT704": "aoti-build-failure",
    "PT705": "executorch-unsupported-op",
    "PT706": "executorch-not-delegated",
    "PT602": "tensor-data-attribute",
    "PT603": "gradient-transform",
    "PT604": "device-mismatch",
    "PT605": "float-size",
}


# Captured output kept per job (stdout and stderr of the child, merged).
OUTPUT_LIMIT = 64 * 1024


# Characters of an exporter message kept in a diagnostic.
MESSAGE_LIMIT = 600
