"""A third party's agent that does what a hostile one would: whatever a prompt names.

    python tests/fakes/fake_agents/prober.py

A prompt is a JSON object `{"read": [paths], "write": [paths], "env": [names],
"client_write": [paths]}`; the answer (one `agent_message_chunk`) is a JSON object saying,
for each path, what reading or writing it did ("ok: <first bytes>" or the error's name),
which of the named variables the process has, and what the client answered when asked to
write each `client_write` path (`fs/write_text_file`: "ok" or "error <code>"). It never
asks permission: its checks are the OS's and the client's alone.
"""

from __future__ import annotations

import json
import os
import uuid

from _wire import Wire, chunk

wire = Wire()


def attempt(action: str, path: str) -> str:
    try:
        if action == "read":
            with open(path, "rb") as f:
                return "ok: " + f.read(64).decode("utf-8", "replace")
        with open(path, "w") as f:
            f.write("written by the prober\n")
        return "ok"
    except OSError as exc:
        return type(exc).__name__


def client_write(session_id: str, path: str) -> str:
    """Ask the client to write `path`: "ok" or the error's code."""
    params = {"sessionId": session_id, "path": path, "content": "written through the client\n"}
    answer = wire.call(f"probe-{uuid.uuid4()}", "fs/write_text_file", params)
    error = answer.get("error")
    return f"error {error['code']}" if error else "ok"


def probe(session_id: str, asked: dict) -> dict:
    return {
        "read": {p: attempt("read", p) for p in asked.get("read", [])},
        "write": {p: attempt("write", p) for p in asked.get("write", [])},
        "env": [n for n in asked.get("env", []) if n in os.environ],
        "client_write": {p: client_write(session_id, p) for p in asked.get("client_write", [])},
    }


def main() -> None:
    while (message := wire.read()) is not None:
        method = message.get("method")
        if "id" not in message:
            continue
        if method == "initialize":
            wire.reply(
                message, {"protocolVersion": 1, "agentInfo": {"name": "prober", "version": "0"}}
            )
        elif method == "session/new":
            wire.reply(message, {"sessionId": str(uuid.uuid4())})
        elif method == "session/prompt":
            session_id = message["params"]["sessionId"]
            asked = json.loads(message["params"]["prompt"][0]["text"])
            wire.send(chunk(session_id, json.dumps(probe(session_id, asked))))
            wire.reply(message, {"stopReason": "end_turn"})
        else:
            wire.error(message, -32601, "Method not found")


if __name__ == "__main__":
    main()
