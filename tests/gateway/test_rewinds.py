"""`POST /v1/conversations/{id}/rewind` (gateway/rewinds.py): the agent's `_session/rewind`
passed through for a conversation's files. A real gateway, our agent over real pipes (its
writes through the gateway's own file service), and the fake LLM."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from pathlib import Path

import httpx

from agentao.gateway.config import AgentSpec, ApiKey
from tests.fakes import sdk_agent
from tests.fakes.fake_llm import FakeLLM, FakeToolCall
from tests.gateway.conftest import LiveGateway, llm_spec
from tests.gateway.test_forks import _turn


def _key(name: str, ceiling: str = "all") -> ApiKey:
    digest = hashlib.sha256(f"sk-{name}".encode()).hexdigest()
    return ApiKey(name, digest, ceiling=ceiling, policy=ceiling)  # type: ignore[arg-type]


def _write(fake_llm: FakeLLM, path: str, content: str, answer: str) -> None:
    fake_llm.reply(tool_calls=[FakeToolCall("write_file", {"file_path": path, "content": content})])
    fake_llm.reply(answer)


def test_the_owner_rewinds_a_conversations_files_with_a_dry_run_first(
    gateway_factory: Callable[..., LiveGateway], fake_llm: FakeLLM, tmp_path: Path
) -> None:
    gw = gateway_factory(
        agents=(llm_spec(tmp_path, fake_llm.env()),), keys=(_key("alice"), _key("bob"))
    )
    work = tmp_path / "work"
    (work / "a.txt").write_text("before\n")
    fake_llm.reply("plain")
    _write(fake_llm, "a.txt", "edited\n", "wrote a")
    _write(fake_llm, "b.txt", "new\n", "wrote b")
    with (
        httpx.Client(base_url=gw.url, headers={"Authorization": "Bearer sk-alice"}) as alice,
        httpx.Client(base_url=gw.url, headers={"Authorization": "Bearer sk-bob"}) as bob,
    ):
        tasks = [_turn(gw, alice, "message 1", None)]
        conv = tasks[0]["conversation_id"]
        tasks += [_turn(gw, alice, f"message {n}", conv) for n in (2, 3)]
        url = f"/v1/conversations/{conv}/rewind"
        theirs = bob.post(url, json={"before_task": tasks[1]["id"]})
        unknown = alice.post(url, json={"before_task": "task_x"})
        extra = alice.post(url, json={"before_task": tasks[1]["id"], "mode": "both"})
        dry = alice.post(url, json={"before_task": tasks[1]["id"], "dry_run": True})
        edited = (work / "a.txt").read_text()
        done = alice.post(url, json={"before_task": tasks[1]["id"]})
        source_tasks = alice.get(f"/v1/conversations/{conv}/tasks").json()["data"]
    assert theirs.status_code == 404 and unknown.status_code == 404
    assert extra.status_code == 400  # the conversation is never cut here: fork for that
    assert dry.status_code == 200, dry.text
    assert {c["path"]: c["action"] for c in dry.json()["changes"]} == {
        "a.txt": "restore",
        "b.txt": "delete",
    }
    assert dry.json()["dry_run"] is True and edited == "edited\n"
    assert done.status_code == 200 and sorted(done.json()["files_changed"]) == ["a.txt", "b.txt"]
    assert (work / "a.txt").read_text() == "before\n" and not (work / "b.txt").exists()
    assert len(source_tasks) == 3  # the log is the record: untouched


def test_a_read_only_key_may_look_but_not_restore(
    gateway_factory: Callable[..., LiveGateway], fake_llm: FakeLLM, tmp_path: Path
) -> None:
    """Attack: a key whose ceiling writes nothing would write files through a rewind."""
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),), keys=(_key("eve", "reads"),))
    fake_llm.reply("plain")
    with httpx.Client(base_url=gw.url, headers={"Authorization": "Bearer sk-eve"}) as eve:
        task = _turn(gw, eve, "message 1", None)
        url = f"/v1/conversations/{task['conversation_id']}/rewind"
        dry = eve.post(url, json={"before_task": task["id"], "dry_run": True})
        refused = eve.post(url, json={"before_task": task["id"]})
    assert dry.status_code == 200 and dry.json()["changes"] == []
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "read_only"


def test_an_agent_that_cannot_rewind_is_a_501(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    spec = AgentSpec("sdk-agent", (sys.executable, sdk_agent.__file__), cwd=str(tmp_path))
    gw = gateway_factory(agents=(spec,), keys=(_key("alice"),))
    with httpx.Client(base_url=gw.url, headers={"Authorization": "Bearer sk-alice"}) as alice:
        task = alice.post("/v1/tasks", json={"agent": "sdk-agent", "prompt": "hi"}).json()
        rewind = alice.post(
            f"/v1/conversations/{task['conversation_id']}/rewind",
            json={"before_task": task["id"]},
        )
    assert rewind.status_code == 501 and rewind.json()["error"]["code"] == "rewind_unsupported"
