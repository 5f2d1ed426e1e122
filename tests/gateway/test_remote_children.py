"""Remote ACP clients get child sessions (issue 25, gateway/remote/children.py): a v1
client that sent `clientCapabilities.subagents` and every v2 client get a subagent as
the spec has it -- its announcement on the parent, its updates and its permission
question under its own session id (answered by that client), its end `idle` -- and may
cancel one child alone; a client that does not opt in keeps the parent's view
(test_children.py). Our client over HTTP/SSE and WebSocket, our agent scripted."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentao.client import (
    AgentUrl,
    Client,
    Handlers,
    PermissionAnswer,
    PermissionRequest,
    TurnEnd,
    Update,
)
from agentao.client.view import ChildEntry
from agentao.gateway.config import ApiKey
from tests.gateway.conftest import LiveGateway, scripted_spec
from tests.gateway.test_children import ASKING_CHILD, task

pytestmark = pytest.mark.timeout(60)

FETCH = {"name": "web_fetch", "arguments": {"url": "http://127.0.0.1:9/"}}  # always asks
STUCK_AND_QUICK = [
    {"tool_calls": [task("alpha", "stuck"), task("beta", "quick")]},
    {"match": "alpha", "tool_calls": [FETCH]},
    {"match": "beta", "text": "beta done"},
    {"text": "parent goes on"},
]


def acp(gw: LiveGateway, scheme: str) -> AgentUrl:
    return AgentUrl(f"{scheme}://127.0.0.1:{gw.port}/acp")


def of(events: list[Any], session_id: str) -> list[Update]:
    return [e for e in events if isinstance(e, Update) and e.session_id == session_id]


@pytest.mark.parametrize(("scheme", "protocol"), [("http", 1), ("ws", 1), ("http", 2)])
async def test_a_remote_client_that_opts_in_gets_the_child_session(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path, scheme: str, protocol: int
) -> None:
    gw = gateway_factory(agents=(scripted_spec(tmp_path, ASKING_CHILD),))
    asked: list[PermissionRequest] = []

    async def allow(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        option = next(o for o in request.options if o.kind == "allow_once")
        return PermissionAnswer(option.option_id)

    handlers = Handlers(permission=allow)
    cwd = gw.config.agents[0].cwd
    async with Client(acp(gw, scheme), protocol=protocol, subagents=True, handlers=handlers) as c:
        session = await c.new_session(cwd)
        events = [e async for e in session.prompt("delegate it")]
    [child] = [e for e in session.view.entries if isinstance(e, ChildEntry)]
    assert (child.title, child.state, child.stop_reason) == ("scribe", "idle", "end_turn")
    [question] = asked
    assert question.session_id == child.session_id and question.root_session_id == session.id
    tools = [u.tool_call.title for u in of(events, child.session_id) if u.kind == "tool_call"]
    assert tools == ["Write kid.txt"]
    said = "".join(u.text or "" for u in of(events, child.session_id) if u.text)
    assert "child wrote" in said
    assert session.view.text.strip() == "parent done"  # the parent's words alone
    assert (tmp_path / "work" / "kid.txt").read_text() == "x"


async def test_a_remote_client_that_does_not_opt_in_keeps_the_parents_view(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    gw = gateway_factory(agents=(scripted_spec(tmp_path, ASKING_CHILD),))
    asked: list[PermissionRequest] = []

    async def allow(request: PermissionRequest) -> PermissionAnswer:
        asked.append(request)
        option = next(o for o in request.options if o.kind == "allow_once")
        return PermissionAnswer(option.option_id)

    cwd = gw.config.agents[0].cwd
    async with Client(acp(gw, "http"), protocol=1, handlers=Handlers(permission=allow)) as c:
        session = await c.new_session(cwd)
        events = [e async for e in session.prompt("delegate it")]
    assert all(e.session_id == session.id for e in events if isinstance(e, Update))
    assert not [e for e in events if isinstance(e, Update) and e.kind == "subagent_update"]
    [question] = asked  # under the parent's session, as before
    assert question.session_id == session.id and question.root_session_id is None
    assert session.view.text.strip() == "parent done"


@pytest.mark.parametrize("protocol", [1, 2])
async def test_a_remote_client_cancels_one_child_alone(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path, protocol: int
) -> None:
    gw = gateway_factory(agents=(scripted_spec(tmp_path, STUCK_AND_QUICK),))
    sessions: list[Any] = []

    async def stuck_child_asks(request: PermissionRequest) -> None:
        await sessions[0].cancel_child(request.session_id)
        await asyncio.Event().wait()  # never answered: the cancel withdraws the question

    handlers = Handlers(permission=stuck_child_asks)
    cwd = gw.config.agents[0].cwd
    async with Client(acp(gw, "http"), protocol=protocol, subagents=True, handlers=handlers) as c:
        session = await c.new_session(cwd)
        sessions.append(session)
        events = [e async for e in session.prompt("two children")]
    assert [e.stop_reason for e in events if isinstance(e, TurnEnd)] == ["end_turn"]
    kids = {e.title: e for e in session.view.entries if isinstance(e, ChildEntry)}
    assert (kids["stuck"].state, kids["stuck"].stop_reason) == ("idle", "cancelled")
    assert (kids["quick"].state, kids["quick"].stop_reason) == ("idle", "end_turn")
    assert session.view.text.strip() == "parent goes on"


REJECTED_CHILD = [
    {"tool_calls": [task("alpha", "stuck")]},
    {"match": "alpha", "tool_calls": [FETCH]},
    {"match": "alpha", "text": "alpha gave up"},
    {"text": "parent goes on"},
]


async def test_another_key_cannot_cancel_a_child_it_does_not_watch(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    keys = (
        ApiKey("alice", _sha("sk-alice"), ceiling="ask", policy="ask"),
        ApiKey("bob", _sha("sk-bob"), ceiling="ask", policy="ask"),
    )
    gw = gateway_factory(agents=(scripted_spec(tmp_path, REJECTED_CHILD),), keys=keys)
    url = f"http://127.0.0.1:{gw.port}/acp"

    async def bob_cancels_then_alice_rejects(request: PermissionRequest) -> PermissionAnswer:
        # over WebSocket: no session header for the HTTP route to refuse first
        bob_url = AgentUrl(url.replace("http", "ws", 1), api_key="sk-bob")
        async with Client(bob_url, subagents=True) as bob:
            await bob.new_session(gw.config.agents[0].cwd)  # a session of its own
            cancel = {"sessionId": request.session_id}
            assert await bob.channel.call_raw("session/cancel", cancel, 10) == {}
        option = next(o for o in request.options if o.kind == "reject_once")
        return PermissionAnswer(option.option_id)

    handlers = Handlers(permission=bob_cancels_then_alice_rejects)
    alice = AgentUrl(url, api_key="sk-alice")
    async with Client(alice, subagents=True, handlers=handlers) as client:
        session = await client.new_session(gw.config.agents[0].cwd)
        events = [e async for e in session.prompt("delegate it")]
    assert [e.stop_reason for e in events if isinstance(e, TurnEnd)] == ["end_turn"]
    [kid] = [e for e in session.view.entries if isinstance(e, ChildEntry)]
    assert (kid.state, kid.stop_reason) == ("idle", "end_turn")  # Bob's cancel reached nothing


def _sha(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


ASK = {"name": "ask_user", "arguments": {"question": "which colour?"}}
CURIOUS_CHILD = [
    {"tool_calls": [task("gamma", "painter")]},
    {"match": "gamma", "tool_calls": [ASK]},
    {"match": "gamma", "text": "painted it"},
    {"text": "parent done"},
]


@pytest.mark.parametrize("subagents", [True, False], ids=["opted-in", "not"])
async def test_a_childs_ask_user_reaches_the_remote_person_naming_the_child(
    gateway_factory: Callable[..., LiveGateway], tmp_path: Path, subagents: bool
) -> None:
    gw = gateway_factory(agents=(scripted_spec(tmp_path, CURIOUS_CHILD),))
    asked: list[tuple[str, str]] = []

    async def answer(session_id: str, question: str) -> str:
        asked.append((session_id, question))
        return "blue"

    handlers = Handlers(ask_user=answer)
    cwd = gw.config.agents[0].cwd
    remote = acp(gw, "http")  # v1: children only for a client that asks for them
    async with Client(remote, protocol=1, subagents=subagents, handlers=handlers) as client:
        session = await client.new_session(cwd)
        events = [e async for e in session.prompt("delegate it")]
    if subagents:
        [kid] = [e for e in session.view.entries if isinstance(e, ChildEntry)]
        assert asked == [(kid.session_id, "which colour?")]
        ask = [u.tool_call for u in of(events, kid.session_id) if u.tool_call is not None][-1]
        assert ask.status == "completed" and "blue" in str(ask.raw)  # the child got it
    else:
        assert asked == [(session.id, "(subagent painter) which colour?")]
    assert session.tool_calls["t-gamma"].status == "completed"
    assert session.view.text.strip() == "parent done"
