"""A third party's agent that does what a hostile one would: whatever a prompt names.

    python tests/fakes/prober_agent.py

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
import sys
import uuid


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


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
    """Ask the client to write `path`; its answer is the next line with this request's id."""
    request_id = f"probe-{uuid.uuid4()}"
    params = {"sessionId": session_id, "path": path, "content": "written through the client\n"}
    send({"jsonrpc": "2.0", "id": request_id, "method": "fs/write_text_file", "params": params})
    for line in sys.stdin:
        message = json.loads(line)
        if message.get("id") == request_id:
            error = message.get("error")
            return f"error {error['code']}" if error else "ok"
    return "closed"


def probe(session_id: str, asked: dict) -> dict:
    return {
        "read": {p: attempt("read", p) for p in asked.get("read", [])},
        "write": {p: attempt("write", p) for p in asked.get("write", [])},
        "env": [n for n in asked.get("env", []) if n in os.environ],
        "client_write": {p: client_write(session_id, p) for p in asked.get("client_write", [])},
    }


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if request_id is None:
            continue
        if method == "initialize":
            result: dict = {"protocolVersion": 1, "agentInfo": {"name": "prober", "version": "0"}}
        elif method == "session/new":
            result = {"sessionId": str(uuid.uuid4())}
        elif method == "session/prompt":
            session_id = message["params"]["sessionId"]
            asked = json.loads(message["params"]["prompt"][0]["text"])
            chunk = {"type": "text", "text": json.dumps(probe(session_id, asked))}
            update = {"sessionUpdate": "agent_message_chunk", "content": chunk}
            params = {"sessionId": session_id, "update": update}
            send({"jsonrpc": "2.0", "method": "session/update", "params": params})
            result = {"stopReason": "end_turn"}
        else:
            error = {"code": -32601, "message": "Method not found"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})
            continue
        send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
