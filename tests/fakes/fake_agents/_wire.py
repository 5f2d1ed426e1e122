"""Blocking NDJSON on stdin/stdout for the fake agents (raw JSON, no agentao imports).

The fakes are deliberately independent of agentao's protocol core: they are
what a third-party agent looks like from the client's side of the pipe.
"""

from __future__ import annotations

import json
import sys
from collections import deque
from typing import Any

_stdin = sys.stdin.buffer
_stdout = sys.stdout.buffer


class Wire:
    def __init__(self) -> None:
        self.backlog: deque[dict[str, Any]] = deque()  # client messages read ahead

    def send(self, *messages: dict[str, Any]) -> None:
        """Write messages in one write() call (so they tend to arrive in one read)."""
        data = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
        _stdout.write(data)
        _stdout.flush()

    def read(self) -> dict[str, Any] | None:
        """The next client message (backlog first); None at EOF."""
        if self.backlog:
            return self.backlog.popleft()
        return self._read_line()

    def _read_line(self) -> dict[str, Any] | None:
        while True:
            line = _stdin.readline()
            if not line:
                return None
            if line.strip():
                return json.loads(line)

    def call(self, request_id: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send a request to the client and block for its response (others are kept)."""
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
        return self.wait_response(request_id)

    def wait_response(self, request_id: Any) -> dict[str, Any]:
        while True:
            message = self._read_line()
            if message is None:
                raise SystemExit(0)
            if "method" not in message and message.get("id") == request_id:
                return message
            self.backlog.append(message)

    def reply(self, request: dict[str, Any], result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    def error(self, request: dict[str, Any], code: int, message: str) -> None:
        self.send(
            {"jsonrpc": "2.0", "id": request["id"], "error": {"code": code, "message": message}}
        )


def update(session_id: str, body: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session_id, "update": body},
    }


def chunk(session_id: str, text: str, kind: str = "agent_message_chunk") -> dict[str, Any]:
    return update(session_id, {"sessionUpdate": kind, "content": {"type": "text", "text": text}})
