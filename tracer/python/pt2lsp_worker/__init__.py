"""pt2lsp tracer worker: runs the real torch.export on the user's models, in the user's interpreter.

The pt2lsp binary embeds this package and its launcher (`worker.py`, beside it), writes them into
a private temporary directory and starts it (tracer/src/worker.rs); nobody runs it by hand:

    python DIR/worker.py --socket PATH --token TOKEN --dir DIR

Nothing here imports torch at module level: the modules that read torch's messages are tested
without it (tracer/python/tests).

It is a zygote. It connects to the Unix socket PATH (the dedicated protocol channel: user code's
`print` writes to stdout during non-strict export, so stdout is never the channel), imports torch,
runs one tiny export to warm the exporter up, says hello, and then forks one child per job, so
every job starts from a clean, already-warm process (no dynamo caches, no `torch.library`
namespaces or interned file names left over from another job) that can be killed on timeout or
cancellation without losing the warm parent.

Protocol 1: one JSON object per line, both ways.

    worker -> manager  {"hello": "pt2lsp-worker", "protocol": 1, "token": ..., "torch": "2.15.0",
                        "python": ..., "python_version": ..., "pid": ...}
                       (on failure "torch": null and "error": a sentence; then the worker exits)
    manager -> worker  {"op": "job", "id": 7, "job": {...}}   start a job (see `run_job`)
                       {"op": "cancel", "id": 7}              kill the job's process
                       {"op": "shutdown"}                     kill every job and exit
    worker -> manager  {"event": "started", "id": 7, "pid": 1234}
                       {"event": "result", "id": 7, "status": ..., "diagnostics": [...], ...}

`status` is "ok" (exported), "failed" (export problems in `diagnostics`), "entrypoint" (the model
or its inputs could not be built), "oom", "timeout", "cancelled" or "crashed" (with `detail`).
A diagnostic is a `findings.Finding` as JSON ({"code", "file", "line", "column", "end_line",
"end_column", "message", "origin", "exception", "fixes", "related"}): 1-based lines, 0-based
columns in UTF-8 bytes (null when only the line is known), always in a file of the user's
workspace, never in torch.

The directory DIR belongs to this worker: each job gets DIR/job-<id> as its temporary directory
(draft_export writes a trace file there), removed when the job ends; the whole of DIR is removed
when the worker exits, whichever way it exits short of SIGKILL (the manager removes it then).
"""
