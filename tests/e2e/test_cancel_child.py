"""Cancel one child alone (issue 25): our agent advertises `capabilities.cancel` on a
child's `subagent_update` and serves `session/cancel` on the child's id; that child ends
`idle`/`cancelled`, its `task` call tells the parent so, and the parent's turn goes on.
Our agent over real pipes (scripted provider), driven by our client's
`Session.cancel_child`, v1 and v2."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agentao.client import (
    AgentCommand,
    Client,
    ClientError,
    Handlers,
    PermissionRequest,
    TurnEnd,
    Update,
)

pytestmark = pytest.mark.timeout(60)

FETCH = {"name": "web_fetch", "arguments": {"url": "http://127.0.0.1:9/"}}  # always asks


def task(word: str, title: str) -> dict[str, Any]:
    return {"id": f"t-{word}", "name": "task", "arguments": {"description": title, "prompt": word}}


SCRIPT = [
    {"tool_calls": [task("alpha", "stuck"), task("beta", "quick")]},
    {"match": "alpha", "tool_calls": [FETCH]},
    {"match": "beta", "text": "beta done"},
    {"text": "parent goes on"},
]


@pytest.fixture
def agent(tmp_path) -> AgentCommand:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": SCRIPT}))
    home = tmp_path / "home"
    env = {"LLM_PROVIDER": "SCRIPTED", "AGENTAO_SCRIPT": str(script), "AGENTAO_HOME": str(home)}
    return AgentCommand.ours(env=env)


def news(events: list[Any], child: str | None = None) -> list[Any]:
    return [
        e
        for e in events
        if isinstance(e, Update)
        and e.kind == "subagent_update"
        and (child is None or e.value.session_id == child)
    ]


@pytest.mark.parametrize("protocol", [1, 2])
async def test_cancelling_one_child_ends_it_alone_and_the_parent_goes_on(
    agent, tmp_path, protocol
) -> None:
    sessions: list[Any] = []

    async def stuck_child_asks(request: PermissionRequest) -> None:
        await sessions[0].cancel_child(request.session_id)
        await asyncio.Event().wait()  # never answered: the cancel withdraws the question

    workspace = tmp_path / "ws"
    workspace.mkdir()
    handlers = Handlers(permission=stuck_child_asks)
    async with Client(agent, protocol=protocol, subagents=True, handlers=handlers) as client:
        session = await client.new_session(str(workspace))
        sessions.append(session)
        events = [e async for e in session.prompt("two children")]
    assert [e.stop_reason for e in events if isinstance(e, TurnEnd)] == ["end_turn"]
    assert session.view.text.strip() == "parent goes on"
    titles = {n.value.title: n.value.session_id for n in news(events) if n.value.title}
    stuck, quick = titles["stuck"], titles["quick"]
    for child in (stuck, quick):  # each announcement offers the cancel
        assert news(events, child)[0].raw["capabilities"]["cancel"] == {}
    assert news(events, stuck)[-1].raw["state"] == {"state": "idle", "stopReason": "cancelled"}
    assert news(events, quick)[-1].raw["state"] == {"state": "idle", "stopReason": "end_turn"}
    calls = session.tool_calls
    assert calls["t-alpha"].status == "failed" and calls["t-beta"].status == "completed"
    assert "cancelled" in calls["t-alpha"].raw["rawOutput"]["stopReason"]


async def test_a_session_that_is_not_a_child_of_this_one_is_refused(agent, tmp_path) -> None:
    async with Client(agent, subagents=True) as client:
        one = await client.new_session(str(tmp_path))
        other = await client.new_session(str(tmp_path))
        with pytest.raises(ClientError, match="not a child"):
            await one.cancel_child(other.id)
        with pytest.raises(ClientError, match="not a child"):
            await one.cancel_child(one.id)
