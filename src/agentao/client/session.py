"""A session with an agent: prompt turns, mode/config/model, close.

One turn at a time per session (as ACP has it). Updates that arrive while
no turn runs -- before the `session/new` answer, after a prompt's answer,
the history replayed by `session/load` -- wait in the session's stream in
order; the next turn yields them first, or `drain()` takes them now.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentao.client.errors import ClientError
from agentao.client.events import Event, ToolCallState
from agentao.client.state import SessionState
from agentao.client.turn import Turn

if TYPE_CHECKING:
    from agentao.client.client import Client

Prompt = str | Sequence[Any]  # text, or content blocks (dicts or schema structs)


class Session:
    def __init__(self, client: Client, state: SessionState, response: Any, cwd: str) -> None:
        self.client = client
        self.state = state
        self.response = response  # NewSessionResponse / LoadSessionResponse / ... (typed)
        self.cwd = cwd
        self._turn: Turn | None = None
        modes = getattr(response, "modes", None)
        if modes is not None and state.current_mode is None:
            state.current_mode = getattr(modes, "current_mode_id", None)

    @property
    def id(self) -> str:
        return self.state.session_id

    @property
    def tool_calls(self) -> dict[str, ToolCallState]:
        """Every tool call seen in this session, merged by id."""
        return self.state.tool_calls

    @property
    def plan(self) -> Any:
        return self.state.plan

    @property
    def current_mode(self) -> str | None:
        return self.state.current_mode

    @property
    def denied_permissions(self) -> int:
        """How many permission requests the policy answered with a rejection."""
        return self.state.denied

    def prompt(self, prompt: Prompt) -> Turn:
        """Send a prompt; iterate the returned Turn for its events."""
        if self._turn is not None:
            raise ClientError(f"session {self.id} already has a turn running")
        self.state.cancelled.clear()
        self._turn = Turn(self, _blocks(prompt))
        self.state.stream.reading = True
        return self._turn

    async def cancel(self) -> None:
        """Cancel the running turn (if any); see `Turn.cancel`."""
        if self._turn is not None:
            await self._turn.cancel()

    def drain(self) -> list[Event]:
        """Events received while no turn ran (e.g. the history `session/load` replayed)."""
        return self.state.stream.drain()

    async def set_mode(self, mode_id: str) -> Any:
        result = await self.client._call(
            "session/set_mode",
            {"sessionId": self.id, "modeId": mode_id},
            "SetSessionModeResponse",
            needed=False,
        )
        self.state.current_mode = mode_id
        return result

    async def set_config_option(self, config_id: str, value: str | bool) -> Any:
        params: dict[str, Any] = {"sessionId": self.id, "configId": config_id, "value": value}
        if isinstance(value, bool):
            params["type"] = "boolean"
        return await self.client._call(
            "session/set_config_option", params, "SetSessionConfigOptionResponse", needed=False
        )

    async def set_model(self, model: str) -> str:
        """agentao's `_agentao.cn/set_model`: the active model id after the switch."""
        result = await self.client.request(
            "_agentao.cn/set_model", {"sessionId": self.id, "model": model}
        )
        answer = result.get("model") if isinstance(result, dict) else None
        return answer if isinstance(answer, str) else model

    async def close(self) -> None:
        """End the turn, `session/close` if the agent supports it, release terminals."""
        await self.cancel()
        if self.client.supports("close"):
            await self.client._call(
                "session/close", {"sessionId": self.id}, "CloseSessionResponse", needed=False
            )
        await self.client._forget_session(self.id)

    def _turn_finished(self, turn: Turn) -> None:
        if self._turn is turn:
            self._turn = None
            self.state.stream.reading = False


def _blocks(prompt: Prompt) -> list[Any]:
    if isinstance(prompt, str):
        return [{"type": "text", "text": prompt}]
    return [{"type": "text", "text": b} if isinstance(b, str) else b for b in prompt]


__all__ = ["Prompt", "Session"]
