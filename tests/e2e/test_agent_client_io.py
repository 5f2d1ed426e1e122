"""Editor-aware I/O (issue 4 item 2): with fs/terminal capabilities the agent reads, writes
and runs commands through the client; without them, locally. The test plays the editor:
its "buffers" differ from the disk, and its terminals are real subprocesses."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from tests.e2e.agent_process import ClientError, running, scripted_env

pytestmark = pytest.mark.timeout(60)
CAPS = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}


def resource_not_found(path):
    return ClientError(-32002, f"Resource not found: {path}")


def acpx_enoent(path):
    """What acpx 0.1.15 answers for a missing file: a generic -32603, the cause in data."""
    details = f"ENOENT: no such file or directory, open '{path}'"
    return ClientError(-32603, "Internal error", {"details": details})


class FakeEditor:
    """Unsaved buffers and terminals, answering the agent's fs/* and terminal/* calls."""

    def __init__(self, agent, buffers, missing=resource_not_found):
        self.buffers = dict(buffers)
        self.missing = missing  # the error for a file it does not have
        self.terminals = {}
        self.released = []
        self.killed = []
        self._ids = itertools.count(1)
        for method in (
            "fs/read_text_file",
            "fs/write_text_file",
            "terminal/create",
            "terminal/output",
            "terminal/wait_for_exit",
            "terminal/kill",
            "terminal/release",
        ):
            agent.handlers[method] = getattr(self, method.replace("/", "_"))

    async def fs_read_text_file(self, m):
        p = m["params"]
        if p["path"] not in self.buffers:
            raise self.missing(p["path"])
        lines = self.buffers[p["path"]].splitlines(keepends=True)
        start = (p.get("line") or 1) - 1
        end = start + p["limit"] if p.get("limit") else None
        return {"content": "".join(lines[start:end])}

    async def fs_write_text_file(self, m):
        self.buffers[m["params"]["path"]] = m["params"]["content"]
        return {}

    async def terminal_create(self, m):
        p = m["params"]
        proc = await asyncio.create_subprocess_exec(
            p["command"],
            *p.get("args", []),
            cwd=p.get("cwd"),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        terminal_id = f"term-{next(self._ids)}"
        self.terminals[terminal_id] = (proc, m)
        return {"terminalId": terminal_id}

    async def terminal_wait_for_exit(self, m):
        proc, _ = self.terminals[m["params"]["terminalId"]]
        await proc.wait()
        return {"exitCode": proc.returncode if proc.returncode >= 0 else None}

    async def terminal_output(self, m):
        proc, _ = self.terminals[m["params"]["terminalId"]]
        out = await proc.stdout.read() if proc.returncode is not None else b""
        status = {"exitCode": proc.returncode} if proc.returncode is not None else None
        result = {"output": out.decode(), "truncated": False}
        if status:
            result["exitStatus"] = status
        return result

    async def terminal_kill(self, m):
        proc, _ = self.terminals[m["params"]["terminalId"]]
        self.killed.append(m["params"]["terminalId"])
        if proc.returncode is None:
            proc.kill()
        return {}

    async def terminal_release(self, m):
        self.released.append(m["params"]["terminalId"])
        return {}


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    (path / "notes.txt").write_text("on disk\n")
    return path


def _script(ws):
    return [
        {
            "tool_calls": [
                {"id": "r1", "name": "read_file", "arguments": {"file_path": "notes.txt"}},
                {
                    "id": "w1",
                    "name": "write_file",
                    "arguments": {"file_path": "out.txt", "content": "from agent\n"},
                },
                {
                    "id": "s1",
                    "name": "run_shell_command",
                    "arguments": {"command": "echo shell-ok && pwd"},
                },
            ]
        },
        {"text": "done"},
    ]


async def test_fs_and_terminal_go_through_the_client(tmp_path, ws):
    env = scripted_env(tmp_path, _script(ws))
    async with running(env, capabilities=CAPS) as agent:
        editor = FakeEditor(agent, {str(ws / "notes.txt"): "unsaved buffer\n"})
        sid = await agent.new_session(ws)
        await agent.call("session/set_mode", {"sessionId": sid, "modeId": "full-access"})
        reply = await agent.prompt(sid, "go")
    assert reply["result"]["stopReason"] == "end_turn"
    updates = agent.updates(sid)

    def final(call_id):
        return [
            u
            for u in updates
            if u["sessionUpdate"] == "tool_call_update" and u["toolCallId"] == call_id
        ]

    read = final("r1")[-1]["content"][0]["content"]["text"]
    assert "unsaved buffer" in read and "on disk" not in read
    assert editor.buffers[str(ws / "out.txt")] == "from agent\n"
    assert not (ws / "out.txt").exists()  # the editor owns the write
    [(term_id, (_proc, create))] = editor.terminals.items()
    assert create["params"]["sessionId"] == sid
    assert create["params"]["cwd"] == str(ws)
    assert editor.released == [term_id]
    shell_updates = final("s1")
    live = [u for u in shell_updates if u.get("status") == "in_progress" and u.get("content")]
    assert live[0]["content"] == [{"type": "terminal", "terminalId": term_id}]
    assert shell_updates[-1]["status"] == "completed"
    assert shell_updates[-1]["content"] == [{"type": "terminal", "terminalId": term_id}]
    methods = [m["method"] for m in agent.agent_requests]
    assert "fs/read_text_file" in methods and "fs/write_text_file" in methods


@pytest.mark.parametrize("missing", [resource_not_found, acpx_enoent])
async def test_a_new_file_is_written_whatever_the_client_says_of_a_missing_one(
    tmp_path, ws, missing
):
    """Before writing, the agent reads the target; the client's "no such file" error,
    by code, message or data, means a new file (acpx answers -32603 with ENOENT in data)."""
    write = {"file_path": "new.txt", "content": "fresh\n"}
    script = [{"tool_calls": [{"id": "w1", "name": "write_file", "arguments": write}]}]
    env = scripted_env(tmp_path, [*script, {"text": "done"}])
    async with running(env, capabilities=CAPS) as agent:
        editor = FakeEditor(agent, {}, missing=missing)
        sid = await agent.new_session(ws)
        reply = await agent.prompt(sid, "create new.txt")
    assert reply["result"]["stopReason"] == "end_turn"
    [final] = [u for u in agent.updates(sid) if u.get("status") in ("completed", "failed")]
    assert final["status"] == "completed", final
    assert editor.buffers == {str(ws / "new.txt"): "fresh\n"}


async def test_without_capabilities_io_is_local(tmp_path, ws):
    env = scripted_env(tmp_path, _script(ws))
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        await agent.call("session/set_mode", {"sessionId": sid, "modeId": "full-access"})
        reply = await agent.prompt(sid, "go")
    assert reply["result"]["stopReason"] == "end_turn"
    assert not agent.agent_requests
    assert (ws / "out.txt").read_text() == "from agent\n"
    shell = [u for u in agent.updates(sid) if u.get("toolCallId") == "s1"][-1]
    assert "shell-ok" in shell["content"][0]["content"]["text"]


async def test_cancel_while_a_client_terminal_runs_kills_and_releases_it(tmp_path, ws):
    call = {"id": "s1", "name": "run_shell_command", "arguments": {"command": "sleep 30"}}
    env = scripted_env(tmp_path, [{"tool_calls": [call]}, {"text": "never"}])
    async with running(env, capabilities=CAPS) as agent:
        editor = FakeEditor(agent, {})
        sid = await agent.new_session(ws)
        await agent.call("session/set_mode", {"sessionId": sid, "modeId": "full-access"})
        task = asyncio.create_task(agent.prompt(sid, "go"))
        waiting = await agent.wait_request("terminal/wait_for_exit")
        await agent.notify("session/cancel", {"sessionId": sid})
        reply = await task
        withdrawn = await agent.wait_for(
            lambda m: (
                m.get("method") == "$/cancel_request" and m["params"]["requestId"] == waiting["id"]
            )
        )
        await agent.wait_request("terminal/release")
    assert reply["result"]["stopReason"] == "cancelled"
    assert withdrawn
    [term_id] = editor.terminals
    assert editor.killed == [term_id] and editor.released == [term_id]
    proc, _ = editor.terminals[term_id]
    assert proc.returncode is not None
