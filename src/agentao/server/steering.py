"""`_session/steering`: a person's words for the running turn, as codex-acp and
claude-agent-acp serve them.

    -> _session/steering {sessionId, prompt: [ContentBlock],
                          _meta?: {steering: {idleBehavior: "promptRequired"|"startNewTurn"}}}
    <- {outcome: "injected"}                               a turn runs: its next step reads it
    <- {outcome: "promptRequired", reason: "noRunningTurn"} idle, and the client keeps the text
    <- {outcome: "startedNewTurn"}                         idle: it became a turn of its own

Advertised as `_meta.steering.supported: true` in the `initialize` result, over v1
(capabilities.py) and v2 (server/v2.py, where a turn it starts from idle is an inserted
prompt like any v2 prompt: `running`, the user message, then `idle`).
Injected text goes to the session's steering inbox (agent/steering.py): the running turn
adds it to the history as a user message before its next model request, after the tool
output the model is about to see, and shows it to clients as a `user_message_chunk`
where it landed (and `session/load` replays it there).
With no turn to read it, codex-acp 2.6.0's rule holds: `idleBehavior: "promptRequired"`
answers so and does nothing; without one (or with "startNewTurn") the text starts a turn
whose updates go out as any turn's, with no `session/prompt` reply of its own. If a turn
is just ending, that new turn waits in line behind it (prompt_queue.py), bounded like a
prompt: a full line is "busy". At most `AGENTAO_STEERING_MAX_PENDING` (32) messages wait for
one step; one more is -32600 (data.reason "steering_full"). Images cannot steer (-32602, data.reason
"images_unsupported"); a bad shape is -32602 naming the field.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any, Final

import msgspec

from agentao.protocol import schema
from agentao.protocol.decode import decode_strict
from agentao.protocol.errors import InvalidParams, InvalidRequest
from agentao.server.live import LiveSession, SessionRegistry
from agentao.server.settings import ServerSettings

Schedule = Callable[[Coroutine[Any, Any, Any]], Any]  # runs work after the reply is written
# How a version starts a turn from idle steering: (session, raw prompt); None: v1's own
StartTurn = Callable[[LiveSession, list[Any]], Coroutine[Any, Any, Any]]

log = logging.getLogger("agentao.server")

STEERING_METHOD: Final = "_session/steering"
STEERING_META: Final = {"steering": {"supported": True}}  # the initialize result's _meta
IDLE_BEHAVIORS: Final = ("promptRequired", "startNewTurn")


async def steer(
    params: dict[str, Any],
    sessions: SessionRegistry,
    settings: ServerSettings,
    after: Schedule,
    start: StartTurn | None = None,
) -> dict[str, Any]:
    """Serve one `_session/steering` request (see the module docstring); `after` runs a
    turn it starts once the answer is written; `start`: v2's way to start one (a prompt
    inserted as v2 inserts them, server/v2.py)."""
    session_id, blocks, idle = _read(params)
    live = sessions.get(session_id)
    text = _steering_text(blocks, live)
    if live.state.state == "prompting" and live.steering.accepting:  # not a cancelled one
        if live.steering.waiting >= settings.steering_max_pending:
            raise InvalidRequest(
                "Invalid Request: too many steering messages wait for the turn's next step "
                f"({settings.steering_max_pending}, AGENTAO_STEERING_MAX_PENDING)",
                {"sessionId": live.id, "reason": "steering_full"},
            )
        live.steering.put(text)
        return {"outcome": "injected"}
    if idle == "promptRequired":
        return {"outcome": "promptRequired", "reason": "noRunningTurn"}
    if start is not None:
        await start(live, params["prompt"])
    else:
        await _start_turn(live, blocks, settings, after)
    return {"outcome": "startedNewTurn"}


def _read(params: Any) -> tuple[str, list[Any], str | None]:
    if not isinstance(params, dict):
        raise InvalidParams("Invalid params: expected an object", {"field": "params"})
    session_id = params.get("sessionId")
    if not isinstance(session_id, str):
        raise InvalidParams("Invalid params: sessionId must be a string", {"field": "sessionId"})
    raw = params.get("prompt")
    if not isinstance(raw, list) or not raw:
        raise InvalidParams(
            "Invalid params: prompt must be a non-empty list of content blocks",
            {"field": "prompt"},
        )
    try:
        blocks = decode_strict(list[schema.ContentBlock], raw)
    except (msgspec.ValidationError, TypeError, ValueError) as exc:
        raise InvalidParams(f"Invalid params: prompt: {exc}", {"field": "prompt"}) from None
    return session_id, blocks, _idle_behavior(params.get("_meta"))


def _idle_behavior(meta: Any) -> str | None:
    if meta is None:
        return None
    steering = meta.get("steering") if isinstance(meta, dict) else None
    if not isinstance(meta, dict) or not isinstance(steering, dict | None):
        raise InvalidParams(
            "Invalid params: _meta.steering must be an object", {"field": "_meta.steering"}
        )
    idle = (steering or {}).get("idleBehavior")
    if idle is not None and idle not in IDLE_BEHAVIORS:
        raise InvalidParams(
            f"Invalid params: idleBehavior must be one of {', '.join(IDLE_BEHAVIORS)}",
            {"field": "_meta.steering.idleBehavior", "reason": "unsupported_idle_behavior"},
        )
    return idle  # type: ignore[no-any-return]


def _steering_text(blocks: list[Any], live: LiveSession) -> str:
    """The words as the model and the history get them; images cannot steer."""
    from agentao.server.turns import prompt_message

    if any(isinstance(b, schema.ImageContentBlock) for b in blocks):
        raise InvalidParams(
            "Invalid params: an image cannot steer a turn (send it as a prompt)",
            {"field": "prompt", "reason": "images_unsupported"},
        )
    message, _shown = prompt_message(blocks, live.llm.model_value, images_ok=False)
    return message.text


async def _start_turn(
    live: LiveSession, blocks: list[Any], settings: ServerSettings, after: Schedule
) -> None:
    """Idle: the words as a turn of their own, started before the answer goes out."""
    from agentao.server.commands import prompt_body
    from agentao.server.turns import claim, prompt_message

    message, shown = prompt_message(blocks, live.llm.model_value, images_ok=False)
    if not await claim(live, settings.prompt_queue_depth):
        raise InvalidRequest(
            "Invalid Request: the session was cancelled before the steering turn started",
            {"sessionId": live.id, "reason": "cancelled"},
        )
    after(_run(live, prompt_body(live, message, shown, settings)))


async def _run(live: LiveSession, body: Any) -> None:
    from agentao.server.prompt_queue import release
    from agentao.server.turns import run_claimed

    try:
        await run_claimed(live, body)
    except Exception:  # nobody awaits this turn's reply: its updates said what happened
        log.exception("session %s: the steering turn failed", live.id)
    finally:
        release(live)


__all__ = ["IDLE_BEHAVIORS", "STEERING_META", "STEERING_METHOD", "StartTurn", "steer"]
