"""The dedicated protocol channel: JSON lines over the socket the manager listens on (a Unix
socket, or a loopback TCP one in spawn mode and where Unix sockets are missing)."""

from __future__ import annotations

import json
import socket


class Channel:
    """JSON lines over the connected socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def send(self, message: dict) -> None:
        data = (json.dumps(message, default=str) + "\n").encode("utf-8")
        self.sock.sendall(data)

    def feed(self) -> list[dict] | None:
        """Reads what is available; None at end of stream."""
        try:
            chunk = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:
            return None
        if not chunk:
            return None
        self.buffer += chunk
        messages = []
        while b"\n" in self.buffer:
            line, self.buffer = self.buffer.split(b"\n", 1)
            if line.strip():
                try:
                    messages.append(json.loads(line))
                except ValueError:
                    messages.append({"op": "invalid", "line": line[:200].decode("utf-8", "replace")})
        return messages
