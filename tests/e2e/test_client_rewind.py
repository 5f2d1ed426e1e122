"""`Session.rewind` and `Session.rewind_points` (client/rewind.py) driving our agent's
`_session/rewind` over v1 and v2: real subprocesses over real pipes, the scripted provider,
and the agent's writes going through the client's own file service."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentao.client import AgentCommand, Client, ClientPolicy
from agentao.client.rewind import FileChange

pytestmark = pytest.mark.timeout(60)


def _write(path: str, content: str) -> dict:
    return {
        "tool_calls": [{"name": "write_file", "arguments": {"file_path": path, "content": content}}]
    }


SCRIPT = [
    _write("a.txt", "turn 0\n"),
    {"text": "wrote a"},
    _write("a.txt", "turn 1\n"),
    {"text": "wrote a again"},
    _write("b.txt", "new\n"),
    {"text": "wrote b"},
]


@pytest.mark.parametrize("protocol", [1, 2])
async def test_the_client_rewinds_files_and_conversation(tmp_path: Path, protocol: int) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": SCRIPT}))
    env = {
        "LLM_PROVIDER": "SCRIPTED",
        "AGENTAO_SCRIPT": str(script),
        "AGENTAO_HOME": str(tmp_path / "home"),
    }
    command = AgentCommand.ours(env=env)
    async with Client(command, protocol=protocol, policy=ClientPolicy(approve="all")) as client:
        session = await client.new_session(str(ws))
        for prompt in ("write a", "write a again", "write b"):
            await session.prompt(prompt).run()
        points = await session.rewind_points()
        (ws / "b.txt").write_text("the person's\n")
        dry = await session.rewind(1, mode="both", dry_run=True)
        refused = await session.rewind(1, mode="both")
        done = await session.rewind(1, mode="both", force=True)
        left = await session.rewind_points()
    assert [(p.index, p.text, p.files) for p in points] == [
        (0, "write a", 1),
        (1, "write a again", 1),
        (2, "write b", 1),
    ]
    assert dry.dry_run and dry.changes[0] == FileChange("a.txt", "restore")
    assert [c.path for c in dry.conflicts] == ["b.txt"]
    assert not refused.can_rewind and not refused.conversation_rewound and refused.error
    assert done.can_rewind and done.conversation_rewound and done.messages_dropped == 2
    assert sorted(done.files_changed) == ["a.txt", "b.txt"]
    assert (ws / "a.txt").read_text() == "turn 0\n" and not (ws / "b.txt").exists()
    assert [p.text for p in left] == ["write a"]
