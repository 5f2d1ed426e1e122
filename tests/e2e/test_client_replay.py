"""Replay what four real agents sent (tests/data/real-agent-transcripts) against our client.

A fake agent (tests/fakes/fake_agents/replay.py) answers our client's requests
with the recorded agent lines: ids 0 and strings, a tool_call repeated for the
same id, permission requests for tool calls never announced, updates after
the prompt result, extra fields, `_meta` everywhere. Every recorded update must
come out of the client unchanged, in order, and every agent request must get
an answer (not an error).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from agentao.client import AgentCommand, Client, ClientPolicy, PermissionDecision, TurnEnd, Update

ROOT = Path(__file__).resolve().parent.parent
TRANSCRIPTS = sorted((ROOT / "data" / "real-agent-transcripts").glob("*.jsonl"))
RECORDED_ROOT = "/home/user/project"
pytestmark = pytest.mark.timeout(60)


def recorded(path: Path, root: str) -> list[tuple[str, dict]]:
    text = path.read_text().replace(RECORDED_ROOT, root)
    return [(e["dir"], e["msg"]) for e in map(json.loads, text.splitlines())]


def prompts(entries) -> list[str]:
    return [
        m["params"]["prompt"][0]["text"]
        for d, m in entries
        if d == "send" and m.get("method") == "session/prompt"
    ]


def agent_requests(entries) -> list[str]:
    return [m["method"] for d, m in entries if d == "recv" and "method" in m and "id" in m]


def stop_reasons(entries) -> list[str]:
    if speaks_v2(entries):  # a v2 turn ends on its idle state_update
        return [
            m["params"]["update"]["stopReason"]
            for d, m in entries
            if d == "recv"
            and m.get("method") == "session/update"
            and m["params"]["update"].get("state") == "idle"
        ]
    prompt_ids = {
        m["id"] for d, m in entries if d == "send" and m.get("method") == "session/prompt"
    }
    return [
        m["result"]["stopReason"]
        for d, m in entries
        if d == "recv" and m.get("id") in prompt_ids and "result" in m
    ]


def speaks_v2(entries) -> bool:
    return any(d == "recv" and m.get("result", {}).get("protocolVersion") == 2 for d, m in entries)


@pytest.mark.parametrize("transcript", TRANSCRIPTS, ids=lambda p: p.stem)
async def test_replayed_agent_loses_nothing(transcript: Path, tmp_path: Path):
    root = str(tmp_path)
    (tmp_path / "hello.txt").write_text("line one\nline two\n")
    entries = recorded(transcript, root)
    expected_updates = [
        m["params"]["update"]
        for d, m in entries
        if d == "recv" and m.get("method") == "session/update"
    ]
    command = AgentCommand(
        (sys.executable, str(ROOT / "fakes/fake_agents/replay.py"), str(transcript), "--root", root)
    )

    async with Client(command, policy=ClientPolicy(approve="all")) as client:
        session = await client.new_session(root)
        events: list = []
        for text in prompts(entries):
            events += [e async for e in session.prompt(text)]
        for _ in range(100):  # an update the agent sent after the last answer
            events += session.drain()
            if sum(isinstance(e, Update) for e in events) >= len(expected_updates):
                break
            await asyncio.sleep(0.02)
        answers = [
            json.loads(line[7:])
            for line in client.stderr_tail().splitlines()
            if line.startswith("ANSWER ")
        ]

    updates = [e for e in events if isinstance(e, Update)]
    assert [u.raw for u in updates] == expected_updates  # nothing dropped, reordered or altered
    assert all(u.session_id == session.id for u in updates)
    known = [u for u in updates if u.value is not None]
    assert len(known) >= len(updates) - sum(u.kind not in KNOWN_KINDS for u in updates)
    assert [e.stop_reason for e in events if isinstance(e, TurnEnd)] == stop_reasons(entries)
    decisions = [e for e in events if isinstance(e, PermissionDecision)]
    assert len(decisions) == agent_requests(entries).count("session/request_permission")
    assert all(d.approved for d in decisions)
    assert [a["method"] for a in answers] == agent_requests(entries)
    assert all("result" in a for a in answers), answers  # no agent request was refused
    for answer in answers:
        if answer["method"] == "fs/read_text_file":
            assert isinstance(answer["result"]["content"], str)


KNOWN_KINDS = {
    "user_message_chunk",
    "agent_message_chunk",
    "agent_thought_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
    "available_commands_update",
    "current_mode_update",
    "config_option_update",
    "session_info_update",
    "usage_update",
}


def test_all_five_transcripts_are_here():
    assert {p.stem for p in TRANSCRIPTS} == {
        "claude-agent-acp",
        "codex-acp",
        "codex-acp-v2",
        "gemini-cli",
        "qwen-code",
    }
