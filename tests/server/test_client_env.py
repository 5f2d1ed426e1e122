"""ClientEnv: a client's "no such file" is recognised by code, message or data."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentao.protocol.errors import PeerError
from agentao.server.client_env import ClientEnv, ClientIo

# (name, the client's error, is it "missing"?)
ERRORS = [
    ("ACP resource not found", PeerError(-32002, "Resource not found: /w/a"), True),
    (
        "acpx 0.1.15",
        PeerError(
            -32603, "Internal error", {"details": "ENOENT: no such file or directory, open '/w/a'"}
        ),
        True,
    ),
    ("errno text in the message", PeerError(-32603, "No such file or directory"), True),
    ("not found in the message", PeerError(-32000, "File not found"), True),
    ("code in data", PeerError(-32603, "Internal error", {"code": "ENOENT"}), True),
    (
        "permission denied",
        PeerError(-32603, "Internal error", {"details": "EACCES: permission denied"}),
        False,
    ),
    ("a plain internal error", PeerError(-32603, "Internal error"), False),
]


class Peer:
    """The client's side of one fs/read_text_file: it answers with `error`."""

    def __init__(self, error: PeerError) -> None:
        self.error = error

    async def request(self, method: str, params: Any = None, *, result_type: Any = ...) -> Any:
        raise self.error


@pytest.mark.parametrize(("error", "missing"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
async def test_missing_file_errors(error: PeerError, missing: bool) -> None:
    env = ClientEnv(Peer(error), "s", ClientIo(read=True), local=None)  # type: ignore[arg-type]
    with pytest.raises(OSError) as caught:
        await env.read_text(Path("/w/a"))
    assert isinstance(caught.value, FileNotFoundError) is missing
