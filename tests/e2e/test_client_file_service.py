"""The client's file service over real pipes: our agent asks `fs/read_text_file` of a
FIFO in the workspace, and the client answers an error at once (issue 20): the turn
ends, and no thread of the client is left blocked on the FIFO."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from agentao.client import Client, ClientPolicy
from tests.client.test_files_beneath import has_no_reader
from tests.e2e.test_search_confined import ours

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="mkfifo semantics"),
]


async def read_file_turn(tmp_path: Path, ws: Path, name: str) -> str:
    call = {"name": "read_file", "arguments": {"file_path": name}}
    async with Client(ours(tmp_path, [call]), policy=ClientPolicy(approve="reads")) as client:
        session = await client.new_session(str(ws))
        # Waits on the turn's end; the timeout only keeps a regression from hanging.
        end = await asyncio.wait_for(session.prompt("go").run(), timeout=30)
    assert end.stop_reason == "end_turn"
    (tool_call,) = session.tool_calls.values()
    return json.dumps(tool_call.raw)


async def test_a_fifo_is_refused_at_once_and_blocks_no_thread(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    fifo = ws / "pipe"
    os.mkfifo(fifo)
    try:
        result = await read_file_turn(tmp_path, ws, "pipe")
        assert "not a regular file" in result
        assert has_no_reader(fifo)
    finally:
        has_no_reader(fifo)  # release a thread the old code left blocked in open()


async def test_control_a_regular_file_is_read(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "plain.txt").write_text("hello through the client\n")
    assert "hello through the client" in await read_file_turn(tmp_path, ws, "plain.txt")
