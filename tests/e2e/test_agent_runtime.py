"""Issue 4's "done when", end to end: one scripted session over real pipes reads, searches,
edits (with diffs), runs a command, fetches a page, plans and calls an MCP tool, with every
permission request answered by the test (the client) and checked."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.agent_process import running, scripted_env

pytestmark = pytest.mark.timeout(90)
MCP_SERVER = str(Path(__file__).resolve().parents[1] / "fakes" / "mcp_server.py")


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = (
            b"<html><head><script>var x=1;</script></head><body><h1>Local docs</h1>"
            b"<p>The answer is 42.</p></body></html>"
        )
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        return None


@pytest.fixture
def page_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/docs"
    server.shutdown()


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


def script(url: str) -> list[dict[str, Any]]:
    return [
        call("read_file", file_path="hello.txt"),
        call("glob", pattern="**/*.txt"),
        call("search_file_content", pattern="greet", include="*.txt"),
        call("replace", file_path="hello.txt", old_string="Hello", new_string="Howdy"),
        call("write_file", file_path="notes/new.txt", content="fresh\n"),
        call("run_shell_command", command="wc -l hello.txt && echo shell-ok"),
        call("web_fetch", url=url),
        call("todo_write", todos=[{"content": "Check the docs", "status": "completed"}]),
        call("mcp__fake__add", a=2, b=3),
        {"text": "All done."},
    ]


def text_of(update: dict[str, Any]) -> str:
    return "".join(
        c["content"]["text"] for c in update.get("content") or [] if c["type"] == "content"
    )


async def test_every_tool_kind_in_one_session(tmp_path: Path, page_url: str) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("Hello world\ngreetings\n")
    env = scripted_env(tmp_path, script(page_url), AGENTAO_WEB_ALLOW_PRIVATE="1")
    asked: list[dict[str, Any]] = []

    async def allow(message: dict[str, Any]) -> dict[str, Any]:
        asked.append(message["params"])
        return {"outcome": {"outcome": "selected", "optionId": "allow"}}

    mcp = {"name": "fake", "command": sys.executable, "args": [MCP_SERVER], "env": []}
    async with running(env) as agent:
        agent.handlers["session/request_permission"] = allow
        sid = await agent.new_session(ws, [mcp])
        reply = await agent.prompt(sid, "do everything", timeout=60)
        updates = agent.updates(sid)

    assert reply["result"]["stopReason"] == "end_turn"
    starts = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    by_kind = {u["kind"] for u in starts}
    assert {"read", "search", "edit", "execute", "fetch", "other"} <= by_kind
    assert starts[0]["title"] == "Read hello.txt"
    assert starts[0]["locations"][0]["path"] == str(ws / "hello.txt")
    ends = {
        u["toolCallId"]: u
        for u in updates
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") in ("completed", "failed")
    }
    assert len(ends) == len(starts)
    assert all(e["status"] == "completed" for e in ends.values()), ends
    end_of = {s["title"]: ends[s["toolCallId"]] for s in starts}

    read = next(v for k, v in end_of.items() if k.startswith("Read"))
    assert "greetings" in text_of(read)
    diffs = [c for e in ends.values() for c in e.get("content") or [] if c["type"] == "diff"]
    edit = next(d for d in diffs if d["path"].endswith("hello.txt"))
    assert edit["oldText"].startswith("Hello world") and edit["newText"].startswith("Howdy world")
    created = next(d for d in diffs if d["path"].endswith("new.txt"))
    assert created["oldText"] is None and created["newText"] == "fresh\n"
    assert (ws / "hello.txt").read_text().startswith("Howdy") and (ws / "notes/new.txt").exists()
    shell = next(v for k, v in end_of.items() if "shell-ok" in k)
    assert "shell-ok" in text_of(shell)
    fetch = next(ends[s["toolCallId"]] for s in starts if s["kind"] == "fetch")
    assert "The answer is 42." in text_of(fetch) and "var x" not in text_of(fetch)
    mcp_end = next(ends[s["toolCallId"]] for s in starts if s["kind"] == "other")
    assert "5" in text_of(mcp_end)
    plans = [u for u in updates if u["sessionUpdate"] == "plan"]
    assert plans[-1]["entries"] == [
        {"content": "Check the docs", "status": "completed", "priority": "medium"}
    ]
    # workspace-write asks before the non-allowlisted shell command and the fetch, only.
    asked_kinds = sorted(p["toolCall"].get("kind", "") for p in asked)
    assert "fetch" in asked_kinds and "execute" in asked_kinds
    assert not {"read", "search", "edit"} & set(asked_kinds)
