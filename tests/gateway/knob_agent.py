"""A minimal ACP agent (not ours) offering sampling knobs as config options.

    python tests/gateway/knob_agent.py

Its sessions offer two select options: `temperature` (values "0", "0.5", "1"; current
"1") and `limit` of category `max_tokens` (values "256", "1024"; current "1024"). Each
prompt is answered with the options' current values, e.g. "temperature=0.5 limit=1024",
so a test sees what the gateway set. Plain JSON lines, like raw_agent.py.
"""

from __future__ import annotations

import json
import sys
import uuid


def send(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def select(option_id: str, values: list[str], current: str, category: str | None) -> dict:
    option = {
        "id": option_id,
        "name": option_id,
        "type": "select",
        "currentValue": current,
        "options": [{"value": v, "name": v} for v in values],
    }
    if category:
        option["category"] = category
    return option


def main() -> None:
    current = {"temperature": "1", "limit": "1024"}
    values = {"temperature": ["0", "0.5", "1"], "limit": ["256", "1024"]}
    categories = {"temperature": None, "limit": "max_tokens"}

    def options() -> list[dict]:
        return [select(k, values[k], current[k], categories[k]) for k in current]

    for line in sys.stdin:
        message = json.loads(line)
        method, request_id, params = message.get("method"), message.get("id"), message.get("params")
        if method == "initialize":
            result: dict = {"protocolVersion": 1, "agentInfo": {"name": "knobs", "version": "0"}}
        elif method == "session/new":
            result = {"sessionId": str(uuid.uuid4()), "configOptions": options()}
        elif method == "session/set_config_option":
            if params["value"] not in values.get(params["configId"], ()):
                send(
                    {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": "no"}}
                )
                continue
            current[params["configId"]] = params["value"]
            result = {"configOptions": options()}
        elif method == "session/prompt":
            said = " ".join(f"{k}={v}" for k, v in current.items())
            update = {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": said},
            }
            send(
                {
                    "jsonrpc": "2.0",
                    "method": "session/update",
                    "params": {"sessionId": params["sessionId"], "update": update},
                }
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
