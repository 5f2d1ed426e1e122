"""A minimal ACP agent that is not ours: plain JSON lines, with things our agent never sends.

    python tests/gateway/raw_agent.py

Every prompt is answered with an `agent_message_chunk` naming the prompt's block types
and carrying a vendor field,
an update of a kind no schema knows, and a `PromptResponse.usage` (the unstable
schema's token counts). It takes images and has no `loadSession`. Used to check that the gateway
passes an agent's updates through untouched and reports real usage.

A prompt saying "steps" first runs one tool call updated three times (pending, then
in_progress with a diff, then completed with output; vendor fields on two of them), a
plan and a usage update: what a session view folds.

A prompt saying "edit" first asks permission for an edit, showing its diff in the request (as
agents that show a change before making it do), and the answer names the option chosen.
"""

from __future__ import annotations

import json
import sys
import uuid
from collections.abc import Iterator


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def update(session_id: str, body: dict) -> None:
    send(
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": session_id, "update": body},
        }
    )


EDIT = {
    "toolCallId": "call-edit-1",
    "title": "Edit notes.txt",
    "kind": "edit",
    "status": "pending",
    "content": [
        {
            "type": "diff",
            "path": "notes.txt",
            "oldText": "remember the milk\nand the bread\n",
            "newText": "remember the oat milk\nand the bread\n",
        }
    ],
}
EDIT_OPTIONS = [
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]


STEPS_CALL = "call-steps-1"
STEPS_PLAN = [
    {"content": "Edit the notes", "priority": "high", "status": "completed"},
    {"content": "Say so", "priority": "low", "status": "pending"},
]
STEPS_OUTPUT = "edited 1 line"


def run_steps(session_id: str) -> None:
    diff = EDIT["content"]
    output = {"type": "content", "content": {"type": "text", "text": STEPS_OUTPUT}}
    for body in (
        {
            "sessionUpdate": "tool_call",
            "toolCallId": STEPS_CALL,
            "title": "Edit notes.txt",
            "kind": "edit",
            "status": "pending",
            "x_vendor": {"step": 1},
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": STEPS_CALL,
            "status": "in_progress",
            "content": diff,
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": STEPS_CALL,
            "status": "completed",
            "content": [*diff, output],
            "x_vendor": {"step": 3},
        },
        {"sessionUpdate": "plan", "entries": STEPS_PLAN},
        {"sessionUpdate": "usage_update", "used": 5000, "size": 100000},
    ):
        update(session_id, body)


def ask_to_edit(session_id: str, lines: Iterator[str]) -> str:
    """Ask the client for permission to edit; the option it chose (or its outcome)."""
    send(
        {
            "jsonrpc": "2.0",
            "id": "ask-edit",
            "method": "session/request_permission",
            "params": {"sessionId": session_id, "toolCall": EDIT, "options": EDIT_OPTIONS},
        }
    )
    for line in lines:  # the client answers before this prompt goes on
        message = json.loads(line)
        if message.get("id") == "ask-edit" and "method" not in message:
            outcome = message["result"]["outcome"]
            return outcome.get("optionId") or outcome["outcome"]
    return "no answer"


def main() -> None:
    lines = iter(sys.stdin)
    for line in lines:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            caps = {"promptCapabilities": {"image": True}}
            result = {
                "protocolVersion": 1,
                "agentInfo": {"name": "raw", "version": "0"},
                "agentCapabilities": caps,
            }
        elif method == "session/new":
            result = {"sessionId": str(uuid.uuid4())}
        elif method == "session/prompt":
            session_id = message["params"]["sessionId"]
            kinds = ",".join(block["type"] for block in message["params"]["prompt"])
            said = "raw says hi"
            if any("steps" in block.get("text", "") for block in message["params"]["prompt"]):
                run_steps(session_id)
            if any("edit" in block.get("text", "") for block in message["params"]["prompt"]):
                said = f"raw was told {ask_to_edit(session_id, lines)}"
            text = {"type": "text", "text": f"{said} ({kinds})"}
            update(
                session_id,
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": text,
                    "x_vendor": {"mood": "odd"},
                },
            )
            update(session_id, {"sessionUpdate": "vendor_thing", "data": [1, 2, 3]})
            usage = {"inputTokens": 12, "outputTokens": 3, "totalTokens": 15, "thoughtTokens": 1}
            result = {"stopReason": "end_turn", "usage": usage}
        elif request_id is None:
            continue
        else:
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {"code": -32601, "message": "Method not found"},
                }
            )
            continue
        send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
