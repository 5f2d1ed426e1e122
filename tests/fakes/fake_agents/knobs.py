"""A minimal ACP agent (not ours) offering sampling knobs as config options.

    python tests/fakes/fake_agents/knobs.py

Its sessions offer two select options: `temperature` (values "0", "0.5", "1"; current
"1") and `limit` of category `max_tokens` (values "256", "1024"; current "1024"). Each
prompt is answered with the options' current values, e.g. "temperature=0.5 limit=1024",
so a test sees what the gateway set. Plain JSON lines (_wire.py), no agentao imports.
"""

from __future__ import annotations

import uuid

from _wire import Wire, chunk


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
    wire = Wire()
    current = {"temperature": "1", "limit": "1024"}
    values = {"temperature": ["0", "0.5", "1"], "limit": ["256", "1024"]}
    categories = {"temperature": None, "limit": "max_tokens"}

    def options() -> list[dict]:
        return [select(k, values[k], current[k], categories[k]) for k in current]

    while (message := wire.read()) is not None:
        method, params = message.get("method"), message.get("params") or {}
        if "id" not in message:
            continue
        if method == "initialize":
            wire.reply(
                message, {"protocolVersion": 1, "agentInfo": {"name": "knobs", "version": "0"}}
            )
        elif method == "session/new":
            wire.reply(message, {"sessionId": str(uuid.uuid4()), "configOptions": options()})
        elif method == "session/set_config_option":
            if params["value"] not in values.get(params["configId"], ()):
                wire.error(message, -32602, "no")
                continue
            current[params["configId"]] = params["value"]
            wire.reply(message, {"configOptions": options()})
        elif method == "session/prompt":
            said = " ".join(f"{k}={v}" for k, v in current.items())
            wire.send(chunk(params["sessionId"], said))
            wire.reply(message, {"stopReason": "end_turn"})
        else:
            wire.error(message, -32601, "Method not found")


if __name__ == "__main__":
    main()
