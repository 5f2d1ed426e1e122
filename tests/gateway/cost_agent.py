"""A minimal ACP agent (v1, JSON lines) that prices its own turns, as agents that know
their model's prices do: after each answer a `usage_update` whose `cost` is the
session's cumulative cost (ACP: `cost` is the session's total), `COST_PER_TURN` US
dollars a turn. No `PromptResponse.usage` (its tokens are estimated).

    python tests/gateway/cost_agent.py
"""

from __future__ import annotations

import json
import sys
import uuid

COST_PER_TURN = 0.03


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def update(session_id: str, body: dict) -> None:
    params = {"sessionId": session_id, "update": body}
    send({"jsonrpc": "2.0", "method": "session/update", "params": params})


def main() -> None:
    turns: dict[str, int] = {}
    for line in sys.stdin:
        message = json.loads(line)
        method, request_id = message.get("method"), message.get("id")
        if method == "initialize":
            info = {"name": "cost", "version": "0"}
            result = {"protocolVersion": 1, "agentInfo": info, "agentCapabilities": {}}
        elif method == "session/new":
            result = {"sessionId": str(uuid.uuid4())}
        elif method == "session/prompt":
            session_id = message["params"]["sessionId"]
            turns[session_id] = turns.get(session_id, 0) + 1
            text = {"type": "text", "text": "priced"}
            update(session_id, {"sessionUpdate": "agent_message_chunk", "content": text})
            cost = {"amount": round(turns[session_id] * COST_PER_TURN, 6), "currency": "USD"}
            update(
                session_id,
                {"sessionUpdate": "usage_update", "used": 100, "size": 1000, "cost": cost},
            )
            result = {"stopReason": "end_turn"}
        elif request_id is None:
            continue
        else:
            error = {"code": -32601, "message": "Method not found"}
            send({"jsonrpc": "2.0", "id": request_id, "error": error})
            continue
        send({"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()
