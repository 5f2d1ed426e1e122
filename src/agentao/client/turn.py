"""One prompt turn: an async iterator over its events, ending with `TurnEnd`.

    turn = session.prompt("fix the test")
    async for event in turn:          # Update | PermissionDecision | TurnEnd (last)
        ...                           # turn.ready(): what else is waiting, at once

The `session/prompt` request is sent when the turn is created. Events come
from the session's stream (`stream.py`) up to the position where the answer
was read, so the order is exactly the agent's. Failure modes end the
iteration with an exception *after* everything received before it:
AgentError (the agent answered with an error), AgentDisconnected (it went
away mid-turn; the endpoint fails the request at EOF, we never hang).

`cancel()` sends `session/cancel`, answers pending permission requests
`cancelled` at once, and waits `Timeouts.cancel_grace` for the agent's answer;
an agent that never answers gets `$/cancel_request` and the turn ends with a
`TurnEnd(stop_reason="cancelled", forced=True)`.

Over ACP v2 (`channel.version == 2`) the `session/prompt` answer only acknowledges the
prompt (`{messageId}`); the turn runs on until the session's `state_update` `idle`
(`tracking.py` marks its place in the stream and hands it to `state.idle`), whose stop
reason and usage make the same `TurnEnd` as v1's answer (`v2.idle_result`). The agent echoes
the user's message itself in v2, so the view takes it from there, not from the prompt.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

from agentao.client.channel import Channel
from agentao.client.errors import ClientError, ProtocolViolation
from agentao.client.events import Event, TurnEnd
from agentao.client.state import SessionState

log = logging.getLogger("agentao.client")


class Turn:
    """One `session/prompt` of the session whose `state` it reads, sent over `channel`."""

    def __init__(self, channel: Channel, state: SessionState, prompt: list[Any]) -> None:
        self.channel = channel
        self.state = state
        self.session_id = state.session_id
        self._stream = state.stream
        self._forced = False
        self._finished = False
        self._error: BaseException | None = None  # raised once the stream is drained
        self._timer: asyncio.TimerHandle | None = None
        self._sent = asyncio.Event()
        self._ended = asyncio.Event()  # set once TurnEnd is taken (a queued turn waits on it)
        state.cancelled.clear()
        state.answered_at = None
        self._v2 = channel.version == 2
        state.idle = asyncio.get_running_loop().create_future() if self._v2 else None
        if not self._v2:  # a v2 agent echoes the prompt as a user message update
            state.view.prompted(prompt)
        state.stream.reading = True
        # Written here, not in the task's first step: the prompt leaves a loop pass sooner
        # (in a gateway, ahead of the work its request started meanwhile).
        reply = channel.send_raw(
            "session/prompt", {"sessionId": state.session_id, "prompt": prompt}
        )
        self._sent.set()
        self._task = asyncio.ensure_future(self._send(reply))
        self._task.add_done_callback(lambda _t: self._settled(reply))

    @property
    def done(self) -> bool:
        return self._finished

    def __aiter__(self) -> Turn:
        return self

    async def __anext__(self) -> Event:
        if self._finished:
            return self._after_end()
        while True:
            item = self._stream.pop(self.state.answered_at)
            if item is not None:
                return item
            if self._task.done() and self._caught_up():
                return await self._end()
            await self._stream.changed()

    def ready(self) -> list[Event]:
        """The turn's events already received and not yet taken, in order, without waiting
        (never its `TurnEnd`: iterating gives that). A relay takes a burst in one call
        this way instead of one `__anext__` per update; iteration goes on after them."""
        if self._finished:
            return []
        return self._stream.take(self.state.answered_at)

    async def run(self) -> TurnEnd:
        """Consume the whole turn; return its end (events are dropped)."""
        end = None
        async for event in self:
            if isinstance(event, TurnEnd):
                end = event
        assert end is not None
        return end

    async def cancel(self) -> None:
        """Ask the agent to stop; pending permission requests are answered `cancelled`."""
        if self._task.done():
            return
        self.state.cancelled.set()
        await self._sent.wait()  # session/cancel must not overtake the prompt on the wire
        with contextlib.suppress(ClientError):
            await self.channel.notify("session/cancel", {"sessionId": self.session_id})
        if self._timer is None:
            grace = self.channel.timeouts.cancel_grace
            self._timer = asyncio.get_running_loop().call_later(grace, self._force)

    def _settled(self, reply: Coroutine[Any, Any, Any]) -> None:
        reply.close()  # a no-op once awaited; a task cancelled before its first step did not
        self._stream.wake()

    async def _send(self, reply: Coroutine[Any, Any, Any]) -> Any:
        answer = await reply
        if self.state.idle is None:
            return answer
        from agentao.client.v2 import idle_result

        self.state.message_id = answer.get("messageId") if isinstance(answer, dict) else None
        return idle_result(await self._idle(self.state.idle))

    async def _idle(self, idle: asyncio.Future[dict[str, Any]]) -> dict[str, Any]:
        """The v2 turn's idle update; AgentDisconnected when the agent goes away first
        (no request is pending any more for the endpoint to fail at EOF)."""
        closed = asyncio.ensure_future(self.channel.endpoint.wait_closed())
        try:
            await asyncio.wait({idle, closed}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            closed.cancel()
        if not idle.done():
            raise await self.channel.disconnected("the agent disconnected during session/prompt")
        return idle.result()

    def _force(self) -> None:
        if not self._task.done():
            log.warning("agent did not answer session/cancel in time; ending the turn")
            self._forced = True
            self._task.cancel()

    def _caught_up(self) -> bool:
        end = self.state.answered_at
        return end is None or self._stream.seq >= end

    async def ended(self) -> None:
        """Until this turn's `TurnEnd` has been taken by its reader."""
        await self._ended.wait()

    async def _end(self) -> Event:
        self._finished = True
        self._ended.set()
        self._stream.reading = False
        if self._timer is not None:
            self._timer.cancel()
        if self._task.cancelled():
            return TurnEnd(self.session_id, "cancelled", forced=self._forced)
        error = self._task.exception()
        if error is None:
            return self._turn_end(self._task.result())
        if self.state.answered_at is None:  # the agent went away: hand over what it sent first
            await self.channel.settle_after_disconnect()
        self._error = error
        return self._after_end()

    def _after_end(self) -> Event:
        if self._error is None:
            raise StopAsyncIteration
        item = self._stream.pop(self.state.answered_at)
        if item is not None:
            return item
        error, self._error = self._error, None
        raise error

    def _turn_end(self, raw: Any) -> TurnEnd:
        from agentao.protocol import schema

        result = raw if isinstance(raw, dict) else {}
        stop_reason = result.get("stopReason")
        if not isinstance(stop_reason, str):
            raise ProtocolViolation(f"session/prompt answered without a stopReason: {raw!r}")
        response = self.channel.decode(schema.PromptResponse, result)
        usage = self._usage(response)
        return TurnEnd(self.session_id, stop_reason, response, result, usage=usage)

    def _usage(self, response: Any) -> Any:
        """schema.Usage from `_meta` (agentao), else from the root (the unstable schema's
        place, where other agents put it; decoded leniently, so a bad one is None)."""
        from agentao.protocol import meta, schema

        raw = (response.meta or {}).get(meta.USAGE)
        if not isinstance(raw, dict):
            return response.usage
        try:
            return self.channel.decode(schema.Usage, raw)
        except ProtocolViolation:
            log.info("ignoring a malformed %s from the agent", meta.USAGE)
            return response.usage


__all__ = ["Turn"]
