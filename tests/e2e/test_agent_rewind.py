"""`_session/rewind` (server/rewind.py, agent/checkpoints.py, agent/rewind.py): the files
and the conversation back to before an earlier user message, from the checkpoints our
agent keeps in its state directory. A real `agentao --acp` over real pipes, the fake LLM
(its recorded requests show what the model is told) and real files in a workspace."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agent_process import AgentProcess, agent_env, running
from tests.e2e.test_agent_fork import _user_texts
from tests.e2e.test_agent_v2_session import idle, v2_initialize
from tests.fakes.fake_llm import FakeLLM, FakeToolCall

pytestmark = pytest.mark.timeout(60)
ORIGINAL = "\ufeffline one\r\nno newline at the end \u2713".encode()  # BOM, CRLF, no EOL


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def env(home: Path, fake_llm: FakeLLM) -> dict[str, str]:
    return agent_env(home, **fake_llm.env())


def _write(fake_llm: FakeLLM, path: str, content: str, answer: str) -> None:
    """One turn that writes `path` with the write_file tool, then answers."""
    fake_llm.reply(tool_calls=[FakeToolCall("write_file", {"file_path": path, "content": content})])
    fake_llm.reply(text=[answer])


async def _session(agent: AgentProcess, ws: Path) -> str:
    await agent.initialize()
    return await agent.new_session(ws)


async def _rewind(agent: AgentProcess, sid: str, before: int, **params: Any) -> dict[str, Any]:
    return await agent.call("_session/rewind", {"sessionId": sid, "beforeTurn": before, **params})


def _actions(result: dict[str, Any]) -> dict[str, str]:
    return {c["path"]: c["action"] for c in result["files"]["changes"]}


async def test_a_rewind_after_three_edits_restores_the_files_and_the_conversation(
    env, ws, fake_llm
):
    (ws / "a.txt").write_bytes(ORIGINAL)
    fake_llm.reply(text=["answer 0"])
    _write(fake_llm, "a.txt", "first edit\n", "answer 1")
    fake_llm.reply(
        tool_calls=[
            FakeToolCall(
                "replace",
                {"file_path": "a.txt", "old_string": "first", "new_string": "second"},
            )
        ]
    )
    fake_llm.reply(text=["answer 2"])
    _write(fake_llm, "sub/b.txt", "a new file\n", "answer 3")
    fake_llm.reply(text=["answer again"])
    async with running(env, init=False) as agent:
        sid = await _session(agent, ws)
        for n in range(4):
            await agent.prompt(sid, f"message {n}")
        edited = (ws / "a.txt").read_bytes(), (ws / "sub" / "b.txt").read_bytes()
        points = await agent.call("_session/rewind_points", {"sessionId": sid})
        dry = await _rewind(agent, sid, 1, mode="both", dryRun=True)
        after_dry = (ws / "a.txt").read_bytes()
        done = await _rewind(agent, sid, 1, mode="both")
        await agent.prompt(sid, "message 1, again")
    assert edited == (b"second edit\n", b"a new file\n")
    assert [(p["index"], p["text"], p["files"]) for p in points["points"]] == [
        (0, "message 0", 0),
        (1, "message 1", 1),
        (2, "message 2", 1),
        (3, "message 3", 1),
    ]
    assert dry["dryRun"] is True and dry["files"]["canRewind"] is True
    assert _actions(dry) == {"a.txt": "restore", "sub/b.txt": "delete"}
    assert dry["conversation"] == {"rewound": False, "messagesDropped": 3}
    assert after_dry == b"second edit\n"  # a dry run changes nothing
    assert (ws / "a.txt").read_bytes() == ORIGINAL  # byte for byte
    assert not (ws / "sub" / "b.txt").exists()
    assert sorted(done["files"]["filesChanged"]) == ["a.txt", "sub/b.txt"]
    assert done["conversation"] == {"rewound": True, "messagesDropped": 3}
    told = fake_llm.requests[-1].body
    assert _user_texts(told) == ["message 0", "message 1, again"]
    said = " ".join(str(m.get("content")) for m in told["messages"] if m["role"] != "system")
    assert "answer 0" in said
    assert not any(word in said for word in ("answer 1", "answer 3", "first edit", "b.txt"))


async def test_a_file_changed_outside_is_refused_and_restored_with_force(env, ws, fake_llm):
    (ws / "a.txt").write_bytes(ORIGINAL)
    fake_llm.reply(text=["answer 0"])
    _write(fake_llm, "a.txt", "the agent's text\n", "answer 1")
    async with running(env, init=False) as agent:
        sid = await _session(agent, ws)
        await agent.prompt(sid, "message 0")
        await agent.prompt(sid, "message 1")
        (ws / "a.txt").write_bytes(b"the person's own work\n")
        dry = await _rewind(agent, sid, 1, mode="both", dryRun=True)
        refused = await _rewind(agent, sid, 1, mode="both")
        kept = (ws / "a.txt").read_bytes()
        points = await agent.call("_session/rewind_points", {"sessionId": sid})
        forced = await _rewind(agent, sid, 1, mode="both", force=True)
    change = dry["files"]["changes"][0]
    assert change["action"] == "conflict" and "changed outside the agent" in change["reason"]
    assert refused["files"]["canRewind"] is False and "a.txt" in refused["files"]["error"]
    assert refused["conversation"]["rewound"] is False  # all or nothing
    assert kept == b"the person's own work\n"  # never silently overwritten
    assert len(points["points"]) == 2
    assert forced["files"]["canRewind"] is True and forced["conversation"]["rewound"] is True
    assert (ws / "a.txt").read_bytes() == ORIGINAL


async def test_a_checkpoint_over_its_bound_is_reported_not_restorable(home, ws, fake_llm):
    env = agent_env(home, AGENTAO_CHECKPOINT_TURN_BYTES="16", **fake_llm.env())
    (ws / "big.txt").write_bytes(b"x" * 100)
    (ws / "small.txt").write_bytes(b"tiny")
    _write(fake_llm, "big.txt", "changed\n", "answer 0")
    _write(fake_llm, "small.txt", "changed too\n", "answer 1")
    async with running(env, init=False) as agent:
        sid = await _session(agent, ws)
        await agent.prompt(sid, "message 0")
        await agent.prompt(sid, "message 1")
        dry = await _rewind(agent, sid, 0, dryRun=True)
        done = await _rewind(agent, sid, 0)
    big = next(c for c in dry["files"]["changes"] if c["path"] == "big.txt")
    assert big["action"] == "not_restorable" and "turn_bytes" in big["reason"]
    assert _actions(done) == {"big.txt": "not_restorable", "small.txt": "restore"}
    assert (ws / "big.txt").read_bytes() == b"changed\n"
    assert (ws / "small.txt").read_bytes() == b"tiny"


async def test_a_tampered_checkpoint_never_writes_outside_the_workspace(
    env, home, tmp_path, ws, fake_llm
):
    """Attack: the manifest names `../outside.txt` and `/abs`; a symlink out of the
    workspace is swapped in for a directory the agent wrote in. Nothing outside changes,
    with force too."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "b.txt").write_bytes(b"outside, keep me\n")
    (tmp_path / "outside.txt").write_bytes(b"keep me too\n")
    (ws / "sub").mkdir()
    (ws / "sub" / "b.txt").write_bytes(b"before\n")
    fake_llm.reply(text=["answer 0"])
    _write(fake_llm, "sub/b.txt", "outside, keep me\n", "answer 1")
    async with running(env, init=False) as agent:
        sid = await _session(agent, ws)
        await agent.prompt(sid, "message 0")
        await agent.prompt(sid, "message 1")
        manifest = home / "checkpoints" / sid / "turn-1.json"
        data = json.loads(manifest.read_text())
        record = data["files"]["sub/b.txt"]
        data["files"]["../outside.txt"] = {"prior": "absent", "after": None, "reason": ""}
        data["files"][str(tmp_path / "abs.txt")] = dict(record)
        manifest.write_text(json.dumps(data))
        (ws / "sub" / "b.txt").unlink()
        (ws / "sub").rmdir()
        os.symlink(outside, ws / "sub")  # the agent's dir is now a link out
        dry = await _rewind(agent, sid, 1, dryRun=True)
        forced = await _rewind(agent, sid, 1, force=True)
    assert _actions(dry) == {
        "../outside.txt": "refused",
        str(tmp_path / "abs.txt"): "refused",
        "sub/b.txt": "refused",
    }
    assert _actions(forced) == _actions(dry)
    assert (tmp_path / "outside.txt").read_bytes() == b"keep me too\n"
    assert not (tmp_path / "abs.txt").exists()
    assert (outside / "b.txt").read_bytes() == b"outside, keep me\n"
    assert forced["files"]["filesChanged"] == []


async def test_a_session_whose_mode_writes_nothing_cannot_rewind_files(env, ws, fake_llm):
    """Attack: a read-only session (a read-only key's ceiling puts it there) would write
    files through a rewind; it may only look."""
    (ws / "a.txt").write_bytes(ORIGINAL)
    _write(fake_llm, "a.txt", "edited\n", "answer 0")
    async with running(env, init=False) as agent:
        sid = await _session(agent, ws)
        await agent.prompt(sid, "message 0")
        await agent.call("session/set_mode", {"sessionId": sid, "modeId": "read-only"})
        dry = await _rewind(agent, sid, 0, dryRun=True)
        refused = await agent.request(
            "_session/rewind", {"sessionId": sid, "beforeTurn": 0, "mode": "both"}
        )
        talk = await _rewind(agent, sid, 0, mode="conversation")
    assert _actions(dry) == {"a.txt": "restore"}
    assert refused["error"]["code"] == -32600
    assert refused["error"]["data"]["reason"] == "read_only"
    assert (ws / "a.txt").read_bytes() == b"edited\n"
    assert talk["conversation"]["rewound"] is True  # the conversation is no file


async def test_a_deleted_session_takes_its_checkpoints_and_nothing_else(
    env, home, tmp_path, ws, fake_llm
):
    """Attack too: a `session/delete` naming `../x` (the checkpoints live in a directory
    named by the session id) removes nothing."""
    victim = home / "checkpoints" / ".." / "keep"
    _write(fake_llm, "a.txt", "edited\n", "answer 0")
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        await agent.call(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "m"}]}
        )
        await idle(agent, sid)
        kept = (home / "checkpoints" / sid / "turn-0.json").exists()
        victim.mkdir(parents=True)
        (victim / "file").write_text("keep me")
        await agent.request("session/delete", {"sessionId": "../keep"})
        await agent.call("session/delete", {"sessionId": sid})
    assert kept and not (home / "checkpoints" / sid).exists()
    assert (victim / "file").read_text() == "keep me"


async def test_a_corrupt_checkpoint_stops_neither_the_turn_nor_reads_as_a_rewind(
    env, home, ws, fake_llm
):
    _write(fake_llm, "a.txt", "one\n", "answer 0")
    fake_llm.reply(
        tool_calls=[FakeToolCall("write_file", {"file_path": "a.txt", "content": "two\n"})]
    )
    fake_llm.reply("answer 1")
    async with running(env, init=False) as agent:
        sid = await _session(agent, ws)
        await agent.prompt(sid, "message 0")
        (home / "checkpoints" / sid / "turn-0.json").write_text("{not json")
        (home / "checkpoints" / sid / "turn-1.json").write_text('{"files": {"a.txt": 7}}')
        second = await agent.prompt(sid, "message 1")
        done = await _rewind(agent, sid, 0, mode="both")
    assert second["result"]["stopReason"] == "end_turn"
    assert (ws / "a.txt").read_text() == "two\n"  # the tool call ran all the same
    assert done["files"]["canRewind"] is False and "cannot be read" in done["files"]["error"]
    assert done["conversation"]["rewound"] is False


async def _allow(message: dict[str, Any]) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": "allow"}}


async def test_a_shell_commands_new_files_go_and_its_edits_are_said_not_restorable(
    env, ws, fake_llm
):
    """A shell command's changes are found by listing the workspace before and after (no
    bytes read): a file it made is removed; one it changed whose bytes were never kept
    is reported, not guessed; one the agent's own tool wrote first goes back."""
    (ws / "kept.txt").write_bytes(b"kept before\n")
    (ws / "other.txt").write_bytes(b"other before\n")
    command = "printf made > made.txt && printf shell > other.txt && printf shell > kept.txt"
    fake_llm.reply(
        tool_calls=[
            FakeToolCall("write_file", {"file_path": "kept.txt", "content": "tool\n"}, id="w"),
            FakeToolCall("run_shell_command", {"command": command}, id="s"),
        ]
    )
    fake_llm.reply(text=["done"])
    async with running(env, init=False) as agent:
        agent.handlers["session/request_permission"] = _allow
        sid = await _session(agent, ws)
        await agent.prompt(sid, "message 0")
        made = (ws / "made.txt").read_bytes(), (ws / "kept.txt").read_bytes()
        dry = await _rewind(agent, sid, 0, dryRun=True)
        done = await _rewind(agent, sid, 0)
    assert made == (b"made", b"shell")
    assert _actions(dry) == {
        "kept.txt": "restore",
        "made.txt": "delete",
        "other.txt": "not_restorable",
    }
    other = next(c for c in dry["files"]["changes"] if c["path"] == "other.txt")
    assert "shell command" in other["reason"]
    assert sorted(done["files"]["filesChanged"]) == ["kept.txt", "made.txt"]
    assert not (ws / "made.txt").exists()
    assert (ws / "kept.txt").read_bytes() == b"kept before\n"
    assert (ws / "other.txt").read_bytes() == b"shell"


@pytest.mark.parametrize(
    "params",
    [
        {"beforeTurn": 1},
        {"beforeTurn": -1},
        {"beforeTurn": True},
        {"beforeTurn": "0"},
        {"beforeTurn": 0, "mode": "everything"},
        {"beforeTurn": 0, "dryRun": "yes"},
        {"beforeTurn": 0, "messageId": "m1"},
    ],
)
async def test_bad_rewind_params_are_invalid_params(env, ws, fake_llm, params):
    fake_llm.reply(text=["answer 0"])
    async with running(env, init=False) as agent:
        sid = await _session(agent, ws)
        await agent.prompt(sid, "message 0")
        refused = await agent.request("_session/rewind", {"sessionId": sid, **params})
    assert refused["error"]["code"] == -32602
    assert refused["error"]["data"]["field"] in params


async def test_v2_serves_and_advertises_rewind(env, ws, fake_llm):
    (ws / "a.txt").write_bytes(ORIGINAL)
    _write(fake_llm, "a.txt", "edited\n", "answer 0")
    async with running(env, init=False) as agent:
        init = await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        await agent.call(
            "session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": "m"}]}
        )
        await idle(agent, sid)
        done = await _rewind(agent, sid, 0, mode="both")
    named = [e["method"] for e in init["_meta"]["_agentao.cn/extensions"]]
    assert named == ["_session/rewind", "_session/rewind_points"]
    assert done["files"]["filesChanged"] == ["a.txt"] and done["conversation"]["rewound"]
    assert (ws / "a.txt").read_bytes() == ORIGINAL


async def test_a_rewind_restores_a_file_a_subagent_edited_in_that_turn(env, ws, fake_llm):
    """The child's edit is kept in the parent's running turn (agent/subagents.py
    `_ParentTurnCheckpoints`): a rewind to before that turn brings the file back byte for
    byte. Kept under the child's own session's turn 0 instead, the parent's turn 1 holds
    nothing and the file stays as the child left it."""
    (ws / "a.txt").write_bytes(ORIGINAL)
    fake_llm.reply(text=["answer 0"])
    child = {"description": "edit a.txt", "prompt": "rewrite a.txt"}
    fake_llm.reply(tool_calls=[FakeToolCall("task", child, id="t1")])  # the parent's turn 1
    _write(fake_llm, "a.txt", "the child's edit\n", "child done")  # the child's turn
    fake_llm.reply(text=["answer 1"])  # the parent, after its child
    async with running(env, init=False) as agent:
        sid = await _session(agent, ws)
        await agent.prompt(sid, "message 0")
        await agent.prompt(sid, "message 1")
        edited = (ws / "a.txt").read_bytes()
        points = await agent.call("_session/rewind_points", {"sessionId": sid})
        done = await _rewind(agent, sid, 1)
    assert edited == b"the child's edit\n"
    assert [(p["index"], p["files"]) for p in points["points"]] == [(0, 0), (1, 1)]
    assert done["files"]["filesChanged"] == ["a.txt"]
    assert (ws / "a.txt").read_bytes() == ORIGINAL  # byte for byte
