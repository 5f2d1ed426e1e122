"""A client-side Connection that notes where each prompt's answer falls in the stream.

The endpoint hands a session's updates to our handler in order, and resolves
a `session/prompt` answer behind them; but an update the agent sent *after*
the answer could still be handled before the turn's task wakes up. So the
position is taken here, synchronously, as lines come off the wire: when the
answer to a prompt is received, the number of that session's updates
received so far is the turn's end (see `stream.py`).

The count must be the one the session's stream numbers by, however often a
session id is opened, closed and opened again on one connection. So when the
client drops a session's state it `discount`s the updates that state took:
what is left are the updates still on their way to the handler, and a state
made for the id later (a reload, or a late update) counts from those.

Over ACP v2 (`use_version(2)`) the prompt's answer is only an acknowledgement
(`{messageId}`): the turn ends with the first `state_update` `idle` of its session after
the prompt was sent, so that update's position is the turn's end, and the update itself
(its stop reason and usage) goes to the callback. An error answer still ends the turn.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from agentao.client.v2 import STATE_UPDATE, is_idle
from agentao.protocol.connection import (
    Connection,
    Notification,
    PendingRequest,
    RequestId,
    Response,
    session_id_of,
)
from agentao.protocol.decode import json_of
from agentao.protocol.framing import Oversize

# (session id, updates of that session received before the answer, the v2 idle update that
# ended the turn or None) -> None
OnPromptAnswer = Callable[[str, int, "dict[str, Any] | None"], None]


class TrackingConnection(Connection):
    def __init__(self, on_prompt_answer: OnPromptAnswer) -> None:
        super().__init__("client")
        self._on_prompt_answer = on_prompt_answer
        self._received: defaultdict[str | None, int] = defaultdict(int)
        self._prompts: dict[RequestId, str] = {}
        self._running: set[str] = set()  # v2: sessions whose prompt waits for its idle

    def receive(self, line: bytes | Oversize) -> Any:
        event = super().receive(line)
        if isinstance(event, Notification):
            if event.method == "session/update":  # the hot path: keep it lean
                self._received[event.session_id] += 1
                if self._running and event.session_id in self._running:
                    self._maybe_idle(event)
        elif isinstance(event, Response):
            session_id = self._prompts.pop(event.id, None)
            if session_id is not None and (self.version != 2 or event.error is not None):
                self._running.discard(session_id)
                self._on_prompt_answer(session_id, self._received.get(session_id, 0), None)
        return event

    def _maybe_idle(self, event: Notification) -> None:
        config = getattr(type(getattr(event.params, "update", None)), "__struct_config__", None)
        if config is not None and config.tag != STATE_UPDATE:
            return  # typed, and not a state update: its bytes need not be read
        update = json_of(event.message.get("params", {}).get("update"))
        session_id = event.session_id
        if session_id is not None and is_idle(update):
            self._running.discard(session_id)
            self._on_prompt_answer(session_id, self._received[session_id], update)

    def request(
        self, method: str, params: Any = None, *, result_type: Any = ...
    ) -> tuple[int, bytes]:
        request_id, data = super().request(method, params, result_type=result_type)
        if method == "session/prompt":
            session_id = _session_id(params)
            if session_id is not None:
                self._prompts[request_id] = session_id
                if self.version == 2:
                    self._running.add(session_id)
        return request_id, data

    def forget(self, request_id: RequestId) -> PendingRequest | None:
        session_id = self._prompts.pop(request_id, None)
        if session_id is not None:
            self._running.discard(session_id)
        return super().forget(request_id)

    def received(self, session_id: str) -> int:
        return self._received.get(session_id, 0)

    def discount(self, session_id: str, handled: int) -> None:
        """Forget `handled` updates of a session whose state the client dropped."""
        left = self._received.get(session_id, 0) - handled
        if left > 0:
            self._received[session_id] = left
        else:  # none in flight: the id costs nothing until it is seen again
            self._received.pop(session_id, None)


def _session_id(params: Any) -> str | None:
    if isinstance(params, dict):
        return session_id_of(params)
    sid = getattr(params, "session_id", None)
    return sid if isinstance(sid, str) else None


__all__ = ["TrackingConnection"]
