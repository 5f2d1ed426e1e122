"""A minimal ACP agent that is not ours: plain JSON lines, with things our agent never sends.

    python tests/gateway/raw_agent.py

Every prompt is answered with an `agent_message_chunk` naming the prompt's block types
and carrying a vendor field,
an update of a kind no schema knows, and a `PromptResponse.usage` (the unstable
schema's token counts). It takes images and has no `loadSession`. Used to check that the gateway
passes an agent's updates through untouched and reports real usage.
"""

from __future__ import annotations

import json
import sys
import uuid


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


def main() -> None:
    for line in sys.stdin:
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
            text = {"type": "text", "text": f"raw says hi ({kinds})"}
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
