"""`session/set_title` (v2 and v1, unstable) on our agent (server/session_title.py) over a real
`agentao --acp` and the fake LLM: advertised in `initialize`, the title normalized and
stored, a `session_info_update` to the live session's listener, kept over the agent's own
title after later turns, shown by `session/list`, and served for a stored session that is
not live; an unknown session is -32002, an empty title -32602. Every message both ways is
checked against the v2 schema (tests/schema_check.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.agent_process import AgentProcess, running
from tests.e2e.test_agent_v2_session import (
    _one_turn,
    _text,
    env,  # noqa: F401 (a fixture)
    idle,
    v2_initialize,
)
from tests.schema_check import check_all

pytestmark = pytest.mark.timeout(60)


def _titles(agent: AgentProcess, sid: str) -> list[Any]:
    infos = agent.updates(sid, every=True)
    return [u.get("title") for u in infos if u["sessionUpdate"] == "session_info_update"]


async def _listed(agent: AgentProcess, sid: str) -> Any:
    listed = (await agent.call("session/list", {}))["sessions"]
    return next(s.get("title") for s in listed if s["sessionId"] == sid)


async def test_a_chosen_title_is_stored_told_and_kept_over_the_agents_own(
    env,  # noqa: F811
    ws,
    fake_llm,
):
    fake_llm.reply(text=["one"])
    fake_llm.reply(text=["two"])
    async with running(env, init=False) as agent:
        init = await v2_initialize(agent)
        sid = (await agent.call("session/new", {"cwd": str(ws)}))["sessionId"]
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("first prompt")]})
        await idle(agent, sid)
        chosen = "  Fix the\n\tlogin \x1b[2Jbug\u202e  "
        answer = await agent.call("session/set_title", {"sessionId": sid, "title": chosen})
        told = _titles(agent, sid)
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("go on")]})
        await idle(agent, sid, nth=2)
        listed = await _listed(agent, sid)
    assert init["capabilities"]["session"]["title"] == {}
    assert answer == {"title": "Fix the login [2Jbug"}  # one line, no control characters
    assert told == ["first prompt", "Fix the login [2Jbug"]  # told at once
    assert _titles(agent, sid)[-1] == "Fix the login [2Jbug"  # the next turn keeps it
    assert listed == "Fix the login [2Jbug"
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_a_stored_session_is_retitled_and_bad_requests_are_refused(
    env,  # noqa: F811
    ws,
    fake_llm,
):
    fake_llm.reply(text=["one"])
    sid = await _one_turn(env, ws, "first prompt")
    fake_llm.reply(text=["two"])
    async with running(env, init=False) as agent:
        await v2_initialize(agent)
        answer = await agent.call("session/set_title", {"sessionId": sid, "title": "Stored"})
        listed = await _listed(agent, sid)
        unknown = await agent.request("session/set_title", {"sessionId": "nope", "title": "x"})
        empty = await agent.request("session/set_title", {"sessionId": sid, "title": " \n\x07"})
        await agent.call("session/resume", {"sessionId": sid, "cwd": str(ws)})
        await agent.call("session/prompt", {"sessionId": sid, "prompt": [_text("go on")]})
        await idle(agent, sid)
    assert answer == {"title": "Stored"} and listed == "Stored"
    assert unknown["error"]["code"] == -32002
    assert empty["error"]["code"] == -32602 and empty["error"]["data"]["field"] == "title"
    assert _titles(agent, sid)[-1] == "Stored"  # resumed, it keeps the stored choice
    assert check_all(agent.received, agent.sent, version=2) == []


async def test_over_v1_too_the_title_is_served_where_the_other_unstable_methods_are(
    env,  # noqa: F811
    ws,
    fake_llm,
):
    """v1's unstable schema has `session/set_title` too (`sessionCapabilities.title`), and
    our agent serves v1's other unstable session methods (fork, list, resume): the same
    title, stored, told as v1's `session_info_update` and listed."""
    fake_llm.reply(text=["one"])
    async with running(env) as agent:
        init = next(m["result"] for m in agent.received if "agentCapabilities" in m["result"])
        sid = await agent.new_session(ws)
        await agent.prompt(sid, "first prompt")
        answer = await agent.call("session/set_title", {"sessionId": sid, "title": "Chosen\n one"})
        listed = await _listed(agent, sid)
        empty = await agent.request("session/set_title", {"sessionId": sid, "title": "\t"})
    assert init["agentCapabilities"]["sessionCapabilities"]["title"] == {}
    assert answer == {"title": "Chosen one"} and listed == "Chosen one"
    assert _titles(agent, sid)[-1] == "Chosen one"
    assert empty["error"]["code"] == -32602
    assert check_all(agent.received, agent.sent, version=1) == []
