"""A remote client's `_session/steering`, passed to the agent only as steering.

Words for a running turn go through as they are: the turn is the gateway's, already
counted against the key's budget and logged. But codex-acp's rule (and ours) for steering
an idle session without `idleBehavior` is to start a turn: passed on as it is, that would
be a turn the gateway never began (no task, no budget check, nothing in the conversation's
log). So the gateway asks every such request for `idleBehavior: "promptRequired"`: an idle
session answers `promptRequired`, and the client sends a `session/prompt`, which the
gateway runs as any turn.
"""

from __future__ import annotations

from typing import Any

from agentao.client.session import STEERING_METHOD


def steering_only(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """`params` as sent to the agent: a steering request never starts a turn there."""
    if method != STEERING_METHOD:
        return params
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    steering = meta.get("steering") if isinstance(meta.get("steering"), dict) else {}
    steering = {**steering, "idleBehavior": "promptRequired"}
    return {**params, "_meta": {**meta, "steering": steering}}


__all__ = ["STEERING_METHOD", "steering_only"]
