"""A session with an agent: prompt turns, steering, mode/config/model, rewind, close.

One turn at a time per session (as ACP has it). Updates that arrive while
no turn runs -- before the `session/new` answer, after a prompt's answer,
the history replayed by `session/load` -- wait in the session's stream in
order; the next turn yields them first, or `drain()` takes them now.

`steer()` sends words for the running turn (`_session/steering`) to an agent that
advertises it (`_meta.steering.supported` in its `initialize` result: ours over v1,
codex-acp, claude-agent-acp); others raise `SteeringUnsupported` before anything is sent.

`cancel_child()` cancels one of its children alone (a subagent: `session/cancel` on the
child's id).

A session talks to the agent through the client's `Channel` and keeps what it
learns in its `SessionState`; `on_close` tells the client it is gone.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from agentao.client.channel import Channel
from agentao.client.errors import ClientError, ProtocolViolation, SteeringUnsupported
from agentao.client.events import Event, ToolCallState, Update
from agentao.client.queued import QueuedTurn
from agentao.client.rewind import (
    REWIND_METHOD,
    REWIND_POINTS_METHOD,
    RewindMode,
    RewindPoint,
    RewindResult,
    read_points,
    read_result,
)
from agentao.client.state import SessionState
from agentao.client.turn import Turn
from agentao.client.view import SessionView
from agentao.protocol import schema

Prompt = str | Sequence[Any]  # text, or content blocks (dicts or schema structs)
OnClose = Callable[[str], Awaitable[None]]  # (session id) -> the client forgets it
SET_MODEL_METHOD = "_agentao.cn/set_model"
STEERING_METHOD = "_session/steering"  # codex-acp's, claude-agent-acp's and ours


class Session:
    def __init__(
        self,
        channel: Channel,
        state: SessionState,
        response: Any,
        cwd: str,
        *,
        closable: bool = False,
        steerable: bool = False,
        on_close: OnClose | None = None,
        root_of: Callable[[str], str] | None = None,
    ) -> None:
        self.channel = channel
        self.state = state
        self.response = response  # NewSessionResponse / LoadSessionResponse / ... (typed)
        self.cwd = cwd
        self.closable = closable  # the agent supports session/close
        self.steerable = steerable  # the agent advertises _session/steering
        self._on_close = on_close
        self._root_of = root_of  # a child session's root (client/children.py)
        self._turn: Turn | None = None
        self._turns: list[Turn] = []  # this one's turns not yet ended (one runs, others queued)
        modes = getattr(response, "modes", None)
        if modes is not None and state.current_mode is None:
            state.current_mode = getattr(modes, "current_mode_id", None)
        mode_option = _mode_option(response)  # v2: the mode is a config option
        if mode_option is not None and state.current_mode is None:
            current = getattr(mode_option, "current_value", None)
            state.current_mode = current if isinstance(current, str) else None
        commands = getattr(response, "available_commands", None)  # v2: in the result too
        if commands and not state.view.commands:
            state.view.commands = _v1_commands(commands)

    @property
    def id(self) -> str:
        return self.state.session_id

    @property
    def tool_calls(self) -> dict[str, ToolCallState]:
        """Every tool call seen in this session, merged by id."""
        return self.state.tool_calls

    @property
    def view(self) -> SessionView:
        """The session as a reader sees it so far (`view.py`)."""
        return self.state.view

    @property
    def plan(self) -> list[schema.PlanEntry]:
        """The latest plan's entries (typed: content, priority, status)."""
        return self.state.view.plan

    @property
    def current_mode(self) -> str | None:
        return self.state.current_mode

    @property
    def denied_permissions(self) -> int:
        """How many permission requests the policy answered with a rejection."""
        return self.state.denied

    @property
    def turn(self) -> Turn | None:
        """The turn still running (or the first waiting to), if any."""
        for turn in self._turns:  # no list made: a watcher asks this for every update
            if not turn.done:
                return turn
        return None

    @property
    def answering(self) -> bool:
        """Whether the update being received now (a watcher asks) is a turn's: one runs,
        and the update came before its `session/prompt` answer on the wire (the answer
        may be read before the updates ahead of it are handed over: `stream.py`); what
        came after the answer is outside every turn. (Asked on the read path for every
        streamed update a gateway relays: no list of the pending turns is made.)"""
        state = self.state
        end = state.answered_at
        if end is not None and state.stream.seq >= end:
            return False
        for turn in self._turns:  # noqa: SIM110 (`turn`'s loop, inline: any() makes a generator)
            if not turn.done:
                return True
        return False

    def watch(self, watcher: Callable[[Update], None]) -> Callable[[], None]:
        """Call `watcher(update)` for every update of this session from now on, in the
        agent's order, whether or not a turn is reading (a gateway relays a session to
        several readers this way); returns the function that stops it. It runs on the
        read path: keep it quick, and let it not raise."""
        self.state.add_watcher(watcher)
        return lambda: self.state.remove_watcher(watcher)

    def prompt(self, prompt: Prompt, *, queue: bool = False) -> Turn:
        """Send a prompt; iterate the returned Turn for its events. While a turn runs this
        is a ClientError, unless `queue`: then the prompt waits for the turns before it and
        is sent when the last of them has ended (`queued.py`; read the turns in order)."""
        pending = self._pending()
        if pending and not queue:
            raise ClientError(f"session {self.id} already has a turn running")
        blocks = _blocks(prompt)
        turn = QueuedTurn(self.channel, self.state, blocks, pending[-1]) if pending else None
        self._turn = turn or Turn(self.channel, self.state, blocks)
        self._turns = [*pending, self._turn]
        return self._turn

    def _pending(self) -> list[Turn]:
        """The turns not yet ended: the running one, then those queued behind it."""
        return [t for t in self._turns if not t.done]

    async def steer(self, prompt: Prompt, idle_behavior: str | None = None) -> str:
        """Words for the running turn (`_session/steering`): the agent's outcome,
        "injected" (its model reads them at its next step, inside the turn), or when no
        turn runs "promptRequired" (`idle_behavior="promptRequired"`: nothing was done)
        or "startedNewTurn" (they started a turn; its updates reach the session's stream
        and watchers). SteeringUnsupported when the agent does not advertise steering."""
        if not self.steerable:
            raise SteeringUnsupported(self.id)
        from agentao.protocol.decode import to_builtins

        params: dict[str, Any] = {"sessionId": self.id, "prompt": to_builtins(_blocks(prompt))}
        if idle_behavior is not None:
            params["_meta"] = {"steering": {"idleBehavior": idle_behavior}}
        result = await self.channel.call_raw(STEERING_METHOD, params, self.channel.timeouts.request)
        outcome = result.get("outcome") if isinstance(result, dict) else None
        if not isinstance(outcome, str):
            raise ProtocolViolation(f"{STEERING_METHOD}: no outcome in {result!r}")
        return outcome

    async def cancel(self) -> None:
        """Cancel the running turn (if any; see `Turn.cancel`) and drop the queued ones."""
        for turn in reversed(self._pending()):  # the queued first: none may start meanwhile
            if isinstance(turn, QueuedTurn) and not turn.sent:
                await turn.cancel()
        if self.turn is not None:
            await self.turn.cancel()

    async def cancel_child(self, child_id: str) -> None:
        """`session/cancel` for one child of this session (a subagent the agent announced,
        or a child's child) alone: the agent ends that child, the turn goes on. Offered by
        agents that advertise it on the child (`capabilities.cancel`: ours). ClientError
        for a session that is not this one's child."""
        if child_id == self.id or self._root_of is None or self._root_of(child_id) != self.id:
            raise ClientError(f"session {child_id!r} is not a child of session {self.id!r}")
        await self.channel.notify("session/cancel", {"sessionId": child_id})

    def drain(self) -> list[Event]:
        """Events received while no turn ran (e.g. the history `session/load` replayed)."""
        return self.state.stream.drain()

    @property
    def modes(self) -> list[str]:
        """The mode ids the agent offers: v1's `modes`, or v2's config option of category
        `mode` (v2 has no session/set_mode)."""
        modes = getattr(self.response, "modes", None)
        if modes is not None:
            return [m.id for m in getattr(modes, "available_modes", None) or ()]
        option = _mode_option(self.response)
        return _option_values(getattr(option, "options", None)) if option is not None else []

    async def set_mode(self, mode_id: str) -> Any:
        """`session/set_mode`, or over v2 `session/set_config_option` of the mode option."""
        option = _mode_option(self.response) if self.channel.version == 2 else None
        if option is not None:
            result = await self.set_config_option(option.config_id, mode_id)
        else:
            params = {"sessionId": self.id, "modeId": mode_id}
            result = await self.channel.call("session/set_mode", params, needed=False)
        self.state.current_mode = mode_id
        return result

    async def set_config_option(self, config_id: str, value: str | bool) -> Any:
        params: dict[str, Any] = {"sessionId": self.id, "configId": config_id, "value": value}
        if isinstance(value, bool):
            params["type"] = "boolean"
        elif self.channel.version == 2:  # v2 tags every value: an id, or a boolean
            params["type"] = "id"
        return await self.channel.call("session/set_config_option", params, needed=False)

    async def set_model(self, model: str) -> str:
        """agentao's `_agentao.cn/set_model`: the active model id after the switch."""
        params = {"sessionId": self.id, "model": model}
        result = await self.channel.call_raw(
            SET_MODEL_METHOD, params, self.channel.timeouts.request
        )
        answer = result.get("model") if isinstance(result, dict) else None
        return answer if isinstance(answer, str) else model

    async def rewind(
        self,
        before_turn: int,
        *,
        mode: RewindMode = "files",
        dry_run: bool = False,
        force: bool = False,
    ) -> RewindResult:
        """`_session/rewind` (client/rewind.py): the files and/or the conversation as
        before the stored turn `before_turn`; `dry_run` only says what would change."""
        params = {
            "sessionId": self.id,
            "beforeTurn": before_turn,
            "mode": mode,
            "dryRun": dry_run,
            "force": force,
        }
        answer = await self.channel.call_raw(REWIND_METHOD, params, self.channel.timeouts.request)
        return read_result(answer)

    async def rewind_points(self) -> list[RewindPoint]:
        """The stored turns a rewind may go back before (`_session/rewind_points`)."""
        params = {"sessionId": self.id}
        timeout = self.channel.timeouts.request
        return read_points(await self.channel.call_raw(REWIND_POINTS_METHOD, params, timeout))

    async def close(self) -> None:
        """End the turn, `session/close` if the agent supports it, release terminals."""
        await self.cancel()
        if self.closable:
            await self.channel.call("session/close", {"sessionId": self.id}, needed=False)
        if self._on_close is not None:
            await self._on_close(self.id)


def _mode_option(response: Any) -> Any:
    """A v2 result's config option for the mode (category `mode`), if any."""
    for option in getattr(response, "config_options", None) or ():
        if getattr(option, "category", None) == "mode" and hasattr(option, "config_id"):
            return option
    return None


def _option_values(options: Any) -> list[str]:
    """The values of a select option's choices (grouped ones too)."""
    values: list[str] = []
    for choice in options or ():
        value = getattr(choice, "value", None)
        if isinstance(value, str):
            values.append(value)
        values += _option_values(getattr(choice, "options", None))
    return values


def _v1_commands(commands: list[Any]) -> list[schema.AvailableCommand]:
    """A v2 result's `availableCommands` as the view's (v1) typed commands."""
    from agentao.protocol.decode import decode_lenient, to_builtins
    from agentao.protocol.v2.to_v1 import commands_v1

    wire = {"availableCommands": commands_v1(to_builtins(commands))}
    return list(decode_lenient(schema.AvailableCommandsUpdate, wire).available_commands)


def _blocks(prompt: Prompt) -> list[Any]:
    if isinstance(prompt, str):
        return [{"type": "text", "text": prompt}]
    return [{"type": "text", "text": b} if isinstance(b, str) else b for b in prompt]


__all__ = ["OnClose", "Prompt", "Session"]
