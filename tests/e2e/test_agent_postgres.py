"""`agentao --acp` with its sessions in PostgreSQL (`AGENTAO_STORE_URL`): real agent
processes over real pipes, a real PostgreSQL server, the scripted provider. Over ACP v1
(`session/load`): the client is told `protocol=1`."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from agentao.client import AgentCommand, AgentError, Client, TurnEnd, Update
from tests.e2e.agent_process import SESSION_KINDS, agent_env, running, scripted_env

pytestmark = pytest.mark.timeout(90)


def our_agent(tmp_path: Path, name: str, responses: list[dict], url: str) -> AgentCommand:
    """Our agent with a state directory of its own (`name`), sessions at `url`."""
    script = tmp_path / f"{name}-script.json"
    script.write_text(json.dumps({"responses": responses}))
    env = {
        "LLM_PROVIDER": "SCRIPTED",
        "AGENTAO_SCRIPT": str(script),
        "AGENTAO_HOME": str(tmp_path / f"{name}-home"),
        "AGENTAO_STORE_URL": url,
    }
    return AgentCommand.ours(env=env)


def history(events: list) -> list[tuple[str, str | None]]:
    return [(e.kind, e.text) for e in events if e.kind not in SESSION_KINDS]


async def answer(turn) -> str:
    events = [e async for e in turn]
    assert isinstance(events[-1], TurnEnd) and events[-1].stop_reason == "end_turn"
    return "".join(e.text or "" for e in events if isinstance(e, Update))


async def test_a_session_moves_between_agent_processes(tmp_path, pg_url):
    """A starts a session; B (another state directory, the same database) loads it, sees
    the history and adds a turn; A, loading it again, sees both turns."""
    ws = tmp_path / "ws"
    ws.mkdir()
    a = our_agent(tmp_path, "a", [{"text": "answer one"}], pg_url)
    b = our_agent(tmp_path, "b", [{"text": "answer two"}], pg_url)
    async with Client(a, protocol=1) as client_a:
        session = await client_a.new_session(str(ws))
        assert await answer(session.prompt("first")) == "answer one"
        async with Client(b, protocol=1) as client_b:
            listed = await client_b.list_sessions(str(ws))
            assert [s.session_id for s in listed.sessions] == [session.id]
            loaded = await client_b.load_session(session.id, str(ws))
            assert history(loaded.drain()) == [
                ("user_message_chunk", "first"),
                ("agent_message_chunk", "answer one"),
            ]
            assert await answer(loaded.prompt("second")) == "answer two"
        again = await client_a.load_session(session.id, str(ws))
        assert history(again.drain()) == [
            ("user_message_chunk", "first"),
            ("agent_message_chunk", "answer one"),
            ("user_message_chunk", "second"),
            ("agent_message_chunk", "answer two"),
        ]
    assert not (tmp_path / "b-home" / "agentao.sqlite3").exists()  # nothing kept locally


def closed_port_url() -> str:
    with socket.socket() as s:  # a loopback port no server listens on: refused at once
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"postgresql://agent:s3cret-pw@127.0.0.1:{port}/team_sessions"


async def test_an_unreachable_store_fails_session_methods_not_the_agent(tmp_path):
    """initialize answers; session/new and session/load fail with -32603 naming host and
    database (never the password); the agent logs it and stays up."""
    ws = tmp_path / "ws"
    ws.mkdir()
    url = closed_port_url()
    command = our_agent(tmp_path, "a", [{"text": "never"}], url)
    async with Client(command, protocol=1) as client:
        with pytest.raises(AgentError) as new:
            await client.new_session(str(ws))
        with pytest.raises(AgentError) as load:
            await client.load_session("some-session", str(ws))
        stderr = client.stderr_tail()
    for caught in (new.value, load.value):
        assert caught.code == -32603 and "/team_sessions" in caught.message
        assert "127.0.0.1:" in caught.message and "s3cret-pw" not in caught.message
        assert caught.data["reason"] == "store_unavailable"
        assert caught.data["store"].endswith("/team_sessions")
    assert "session store unavailable" in stderr and "s3cret-pw" not in stderr
    log = (tmp_path / "a-home" / "agent.log").read_text()
    assert "team_sessions" in log and "s3cret-pw" not in log


@pytest.mark.parametrize("with_url", [False, True])
async def test_psycopg_is_loaded_only_for_a_store_url(tmp_path, with_url, request):
    """Cold start: without AGENTAO_STORE_URL the agent never imports psycopg, even after
    a session and a turn; with one, the first session method does."""
    ws = tmp_path / "ws"
    ws.mkdir()
    extra = {"AGENTAO_STORE_URL": request.getfixturevalue("pg_url")} if with_url else {}
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": [{"text": "hi"}]}))
    env = agent_env(
        tmp_path / "home",
        LLM_PROVIDER="SCRIPTED",
        AGENTAO_SCRIPT=str(script),
        PYTHONPROFILEIMPORTTIME="1",  # every import, one line each, on stderr
        **extra,
    )
    if not with_url:
        env.pop("AGENTAO_STORE_URL", None)
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        assert "result" in await agent.prompt(sid, "hello")
    imported = {
        line.rsplit("|", 1)[-1].strip()
        for line in agent.stderr.decode().splitlines()
        if line.startswith("import time:")
    }
    assert ("psycopg" in imported) is with_url
    assert ("psycopg_pool" in imported) is with_url


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_a_password_in_the_store_url_never_reaches_the_log(tmp_path):
    """No server at the URL: session/new fails, and neither agent.log nor stderr shows the
    password given as a query parameter or as userinfo."""
    url = f"postgresql://u:hunter2@127.0.0.1:{_closed_port()}/db?password=hunter2"
    env = scripted_env(tmp_path, [{"text": "unused"}], AGENTAO_STORE_URL=url)
    async with running(env) as agent:
        reply = await agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        assert reply["error"]["data"]["reason"] == "store_unavailable"
        assert "hunter2" not in json.dumps(reply)
    log = (tmp_path / "home" / "agent.log").read_text()
    assert "hunter2" not in log
    assert "sessions in the PostgreSQL store at postgresql://[redacted]@127.0.0.1:" in log
    assert "hunter2" not in agent.stderr.decode()
