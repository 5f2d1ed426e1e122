"""The protocol core in a real subprocess over real pipes: the echo agent, and a fuzz run."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

ECHO_AGENT = Path(__file__).resolve().parents[2] / "examples" / "echo_agent.py"


def run_agent(data: bytes, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, str(ECHO_AGENT), *args],
        input=data,
        capture_output=True,
        timeout=timeout,
        check=False,
    )


def request(id: object, method: str, params: dict) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).encode()


def test_echo_session_over_pipes() -> None:
    lines = [
        request(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}),
        request("n", "session/new", {"cwd": "/tmp", "mcpServers": []}),
    ]
    proc = run_agent(b"\n".join(lines) + b"\n")
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 0, proc.stderr
    assert replies[0] == {
        "jsonrpc": "2.0",
        "id": 0,
        "result": {"protocolVersion": 1, **replies[0]["result"]},
    }
    assert replies[1]["id"] == "n" and "sessionId" in replies[1]["result"]


def garbage(rng: random.Random, i: int) -> bytes:
    """A frame that must get exactly one error reply."""
    kind = i % 12
    if kind == 0:
        return b"{not json" + str(i).encode()
    if kind == 1:
        return bytes(rng.randrange(128, 256) for _ in range(rng.randrange(1, 40)))
    if kind == 2:
        return b"[1,2,3]"
    if kind == 3:
        return b"[]"
    if kind == 4:
        return json.dumps(rng.choice(["s", 1, 2.5, None, True])).encode()
    if kind == 5:
        return b'{"id":' + str(i).encode() + b',"method":"initialize"}'  # no jsonrpc
    if kind == 6:
        return b"[" * 100_000 + b"]" * 100_000
    if kind == 7:
        return b"x" * 70_000  # above the 64 KiB cap the test sets
    if kind == 8:
        return b'{"jsonrpc":"2.0","id":' + str(i).encode() + b',"method":"nope/nothing"}'
    if kind == 9:
        return b'{"jsonrpc":"2.0","id":true,"method":"initialize"}'
    if kind == 10:
        return (
            b'{"jsonrpc":"2.0","id":'
            + str(i).encode()
            + b',"method":"initialize","params":{"protocolVersion":true}}'
        )
    return (
        b'{"jsonrpc":"2.0","id":"' + str(i).encode() + b'","result":{}' + b"\xc3"
    )  # truncated + bad utf-8


def test_fuzz_5000_frames_every_request_answered_once() -> None:
    rng = random.Random(20261122)
    frames: list[bytes] = []
    valid_ids: list[str] = []
    for i in range(5000):
        if i % 5 == 0:
            rid = f"v-{i}"
            valid_ids.append(rid)
            frames.append(request(rid, "initialize", {"protocolVersion": 1}))
        else:
            frames.append(garbage(rng, i))
    proc = run_agent(b"\n".join(frames) + b"\n", "--max-line-bytes", str(64 * 1024))
    assert proc.returncode == 0, proc.stderr[-2000:]
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(replies) == len(frames)  # every frame answered exactly once
    ok_ids = [r["id"] for r in replies if "result" in r]
    assert sorted(ok_ids) == sorted(valid_ids)
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    assert all("error" in r for r in replies if r["id"] not in set(valid_ids))


def test_stdin_from_dev_null_exits_cleanly() -> None:
    proc = subprocess.run(
        [sys.executable, str(ECHO_AGENT)], stdin=subprocess.DEVNULL, capture_output=True, timeout=30
    )
    assert proc.returncode == 0 and proc.stdout == b""


def test_files_as_stdin_and_stdout(tmp_path: Path) -> None:
    (tmp_path / "in.jsonl").write_bytes(request(1, "initialize", {"protocolVersion": 1}) + b"\n")
    with (tmp_path / "in.jsonl").open("rb") as stdin, (tmp_path / "out.jsonl").open("wb") as stdout:
        subprocess.run(
            [sys.executable, str(ECHO_AGENT)], stdin=stdin, stdout=stdout, timeout=30, check=True
        )
    assert json.loads((tmp_path / "out.jsonl").read_bytes())["id"] == 1


def test_stray_print_goes_to_stderr_not_the_wire() -> None:
    code = (
        "import asyncio, sys; sys.argv = ['x']\n"
        "from agentao.protocol.stdio import open_stdio\n"
        "async def main():\n"
        "    r, w = await open_stdio()\n"
        "    print('stray')\n"
        "    w.write(b'{}\\n')\n"
        "asyncio.run(main())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, timeout=30, stdin=subprocess.PIPE
    )
    assert proc.stdout == b"{}\n"
    assert b"stray" in proc.stderr
