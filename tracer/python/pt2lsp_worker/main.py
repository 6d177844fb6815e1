"""Start-up: connect to the manager, import torch, warm the exporter up, say hello, serve jobs."""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import sys
import tempfile

from .channel import Channel
from .protocol import PROTOCOL
from .spawn import SpawnPool
from .zygote import Zygote, set_parent_death_signal


def _warm_up(directory: str) -> None:
    """One tiny export, so that forked jobs start with the exporter's lazy imports done."""
    import torch
    import torch._dynamo  # noqa: F401
    import torch.export
    import torch.export._draft_export  # noqa: F401
    import torch.fx.experimental.symbolic_shapes  # noqa: F401

    class Tiny(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(4, 4)

        def forward(self, x):
            return torch.relu(self.linear(x)) + x.shape[0]

    batch = torch.export.Dim("batch")
    torch.export.export(Tiny(), (torch.randn(3, 4),), dynamic_shapes={"x": {0: batch}})


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="pt2lsp-worker")
    address = parser.add_mutually_exclusive_group(required=True)
    address.add_argument("--socket", help="the manager's Unix socket")
    address.add_argument("--tcp", help="the manager's loopback address, HOST:PORT")
    parser.add_argument("--token", required=True)
    parser.add_argument("--dir", required=True)
    parser.add_argument("--start-method", choices=("fork", "spawn"), default="fork")
    parser.add_argument("--pool", type=int, default=2, help="spawn: processes kept warm")
    options = parser.parse_args(argv)
    run_dir = os.path.abspath(options.dir)

    set_parent_death_signal(signal.SIGTERM)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    if options.socket:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        target = options.socket
    else:
        host, _, port = options.tcp.rpartition(":")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        target = (host, int(port))
    try:
        sock.connect(target)
        channel = Channel(sock)
        hello = {
            "hello": "pt2lsp-worker",
            "protocol": PROTOCOL,
            "token": options.token,
            "python": sys.executable,
            "python_version": sys.version.split()[0],
            "pid": os.getpid(),
        }
        try:
            import torch

            tempfile.tempdir = run_dir
            if options.start_method == "fork":
                _warm_up(run_dir)  # forked jobs inherit it; spawned ones warm up themselves
        except BaseException as exc:  # noqa: BLE001 - any failure is reported, then we exit
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            hello["torch"] = None
            hello["error"] = f"{type(exc).__name__}: {exc}".strip()
            channel.send(hello)
            return 3
        hello["torch"] = torch.__version__.split("+")[0]
        channel.send(hello)
        if options.start_method == "spawn":
            SpawnPool(channel, run_dir, options.pool).serve()
        else:
            Zygote(channel, run_dir).serve()
        return 0
    finally:
        # The server's exit sends SIGTERM (the parent-death signal), often while this clean-up
        # runs: the handler's SystemExit would cut it short and leave the directory behind.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        shutil.rmtree(run_dir, ignore_errors=True)
