"""The v2 method surface of `agentao --acp`: what a client that settled ACP v2 can call.

The endpoint asks `AcpAgent.for_version(version)` which object serves a connection's version
(protocol/endpoint.py); a v1 connection gets the `AcpAgent` itself, a v2 one this surface. A
method is served in v2 exactly when this class has its handler (the generated python_name,
`session/new` -> `session_new`); every other v2 method answers -32601 "Method not found", and
`initialize` advertises only what is here (server/capabilities.py reads this class).

A view of one session model, not a second one: every handler here runs the `AcpAgent`'s own
(sessions, turns, store, replay), and only the wire differs. Sessions opened on a v2
connection send through a `V2Outbox` (server/v2_updates.py writes each event and update in
v2) and ask the person through `V2Interaction` (v2's `session/request_permission`, and
`requires_action` / `running` around every question).

session/new       mcpServers optional; configOptions carry the mode and the model, and
                  `availableCommands` the slash commands (v1 sends them as an update
                  after new, before load's reply; v2 has them in new, resume and fork
                  results, so a client, or a gateway's v1 client, has them before the reply)
session/prompt    checked, then inserted: `state_update running`, the user message echoed
                  with its `messageId`, the reply `{messageId}`; the turn runs after the
                  reply and ends with `state_update idle` + stopReason (usage under
                  `_meta["agentao.cn/usage"]`: the stable schema's idle has no `usage`);
                  a failure after insertion is idle with stopReason "error" and `error`.
                  One sent while a turn runs is held, as codex-acp 2.6.0 holds it and the
                  schema allows ("acceptance means insertion, not receipt or queueing"):
                  up to AGENTAO_PROMPT_QUEUE_DEPTH wait (one more: v1's -32600 "busy"),
                  each inserted after the previous turn's idle (`running`, its user
                  message, then its reply) and run as a turn of its own; `session/cancel`
                  answers the held ones -32800 (prompt_queue.py)
session/cancel    the running turn: it ends as idle "cancelled"
session/resume    the stored session live again; `replayFrom: {type: "start"}` replays its
                  history (v1's load replay, in v2 updates) before the reply; another
                  cursor type is -32602
session/close, session/list, session/delete      as v1
ask_user          `elicitation/create` (a form with one string field, `answer`) when the
                  client advertised `elicitation.form`; else `_agentao.cn/ask_user` as in v1.
                  `requires_action` while it waits, as for a permission
session/set_config_option   `mode` (a permission preset, within the ceiling) or `model`;
                  a mode or model changed any way (a slash command too) is sent as a
                  `config_option_update` with the whole config
tool_call/cancel  stops one running tool call that advertised `capabilities.cancel` (a
                  shell command: its process group, in its sandbox; a fetch; an MCP
                  call): `{}` once the cancel is delivered, then the call's final
                  `tool_call_update` ("cancelled", or "completed"/"failed" if it finished
                  first); the model is told and the turn goes on (agent/stoppable.py).
                  -32602 with data.reason unknown / not_cancellable / final
terminal/cancel   kills the command of one of the session's agent-owned terminals (a
                  shell command the agent runs: server/v2_updates.py shows it as a
                  terminal) while it runs: `{}`, then its `terminal_update` with
                  `exitStatus`; the tool call ends as a command killed by a signal and
                  the turn goes on. -32602 (data.reason unknown / final) otherwise
session/fork      (unstable) a new session with the source's stored history, its own id,
                  the source untouched (server/fork.py); answers its configOptions and
                  availableCommands
session/status    (unstable) `open` with the state now (`running`, `requires_action`, or
                  `idle` with the last turn's stop reason; none before a first turn) or
                  `saved` (stored, not live: resume it); unknown -32002
session/set_title (unstable) a title the person chose, for a live or stored session:
                  normalized (one line, no control characters, cut to the store's
                  title_chars; empty is -32602), stored (session/list shows it, the
                  agent's own later titles never replace it), a `session_info_update` to
                  the live session's listeners; unknown -32002 (server/session_title.py)
auth/status       (unstable) `authenticated` when the provider key resolves (one account,
                  named by its provider), `unauthenticated` when it does not,
                  `not_required` for the scripted provider
auth/login        method "provider-key" (type agent): checks that the configured provider's
                  key resolves from the environment, else -32000 naming the variables; no
                  key travels on the wire. auth/logout: nothing stored to forget, `{}`
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentao.agent.events import ToolCallStarted, TurnEnded
from agentao.agent.stoppable import StopRefused
from agentao.agent.tools.base import ASK_USER_UNAVAILABLE
from agentao.protocol import schema
from agentao.protocol.connection import params_of
from agentao.protocol.decode import decode_strict, to_builtins
from agentao.protocol.endpoint import Endpoint
from agentao.protocol.errors import (
    AcpError,
    AuthRequired,
    InternalError,
    InvalidParams,
    RequestCancelled,
    SessionNotFound,
)
from agentao.protocol.v2.from_v1 import replay_from
from agentao.server.capabilities import initialize_response_v2
from agentao.server.config_options import MODEL_CONFIG_ID, mode_state, model_options
from agentao.server.gates import UpdateGate, kind_of
from agentao.server.interaction import PERMISSION_OPTIONS, ClientInteraction
from agentao.server.outbox import Outbox
from agentao.server.prompt_queue import release
from agentao.server.rewind import REWIND_METHOD, REWIND_POINTS_METHOD
from agentao.server.rewind import handlers as rewind_handlers
from agentao.server.steering import STEERING_METHOD, steer
from agentao.server.v2_updates import V2Mapper, new_message_id, state_update, tool_call_v2

if TYPE_CHECKING:
    from agentao.agent.events import TurnEvent
    from agentao.protocol.v2 import schema as v2
    from agentao.server.live import LiveSession
    from agentao.server.opening import SessionFactory

log = logging.getLogger("agentao.server")

MODE_CONFIG_ID = "mode"
ELICITATION_METHOD = "elicitation/create"
# v1 updates that change the config (a mode, or the model alone): v2 sends the whole config
CONFIG_KINDS = frozenset({"current_mode_update", "config_option_update"})
ANSWER_FIELD = "answer"  # the one field of ask_user's form
PROVIDER_KEY_METHOD = "provider-key"  # the one auth method: the provider key, server-side
SCRIPTED_PROVIDER = "SCRIPTED"  # plays a file: no key, no account
# v2's value tag (`type: "id"`) and `_meta`: v1's model setter takes neither.
STOP_REFUSED = {  # v2: -32602 for an unknown, final or not cancellable tool call
    StopRefused.UNKNOWN: "is unknown in the session's running turn",
    StopRefused.NOT_CANCELLABLE: "is not cancellable (not running, or a tool that cannot stop)",
    StopRefused.FINAL: "is already final",
}
V2_ONLY_SET_FIELDS = frozenset(
    {"type", "_meta"}
)  # the one replay cursor we serve: the whole history


class V2Outbox(Outbox):
    """Session updates for a v2 connection: every event and update through `V2Mapper`.
    No capability gate: v2 sends notices and compaction to every client."""

    def __init__(
        self, endpoint: Endpoint, options_of: Callable[[str], list[dict[str, Any]] | None]
    ) -> None:
        self.view = V2Mapper()
        self.options_of = options_of  # a session's v2 config options (None: no such session)
        super().__init__(endpoint, UpdateGate(), self.view.v1)

    async def emit(self, session_id: str, event: TurnEvent, live: bool = True) -> None:
        for target, child in self.children.route(session_id, event, self.view.events):
            wire = child if isinstance(child, dict) else self.view.v1_update(child)
            if wire is not None:  # a subagent_update: v2's shape is v1's
                await self._notify(target, wire)
        for update in self.view.events(session_id, event):
            await self._notify(session_id, update)

    def shows_children(self) -> bool:
        return True  # native in v2: every client takes child sessions

    async def send(self, session_id: str, update: Any, live: bool = True) -> None:
        if kind_of(update) in CONFIG_KINDS:  # v2 has modes only among the config options
            options = self.options_of(session_id)
            if options is not None:
                update = {"sessionUpdate": "config_option_update", "configOptions": options}
        wire = self.view.v1_update(update)
        if wire is not None:
            await self._notify(session_id, wire)

    async def _notify(self, session_id: str, update: dict[str, Any]) -> None:
        await self.endpoint.notify("session/update", {"sessionId": session_id, "update": update})


class V2Interaction(ClientInteraction):
    """The person behind a v2 client: v2's permission request, and `requires_action`."""

    def permission_params(self, call: ToolCallStarted) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "title": f"Allow: {call.title}?",
            "subject": {"type": "tool_call", "toolCall": tool_call_v2(call)},
            "options": [
                {"optionId": oid, "name": name, "kind": kind}
                for oid, name, kind in PERMISSION_OPTIONS
            ],
        }

    def __init__(self, peer: Any, session_id: str, elicit: bool = False) -> None:
        super().__init__(peer, session_id)
        self.elicit = elicit  # the client advertised form elicitation

    def ask_user_request(self, question: str) -> tuple[str, Any]:
        """`ask_user` as a one-field form where the client takes elicitations; else as v1
        (the vendor request, which a client that does not know it leaves unanswered)."""
        if not self.elicit:
            return super().ask_user_request(question)
        return ELICITATION_METHOD, {
            "sessionId": self.session_id,
            "mode": "form",
            "message": question,
            "requestedSchema": {
                "type": "object",
                "properties": {ANSWER_FIELD: {"type": "string", "title": "Answer"}},
                "required": [ANSWER_FIELD],
            },
        }

    def ask_user_answer(self, result: Any) -> str:
        if not self.elicit:
            return super().ask_user_answer(result)
        content = result.get("content") if isinstance(result, dict) else None
        accepted = isinstance(result, dict) and result.get("action") == "accept"
        answer = content.get(ANSWER_FIELD) if isinstance(content, dict) else None
        # declined, cancelled, or no usable answer: the model hears the person is unavailable
        return answer if accepted and isinstance(answer, str) else ASK_USER_UNAVAILABLE

    async def waiting(self, on_person: bool) -> None:
        state = "requires_action" if on_person else "running"
        update = {"sessionId": self.session_id, "update": state_update(state)}
        await self.peer.notify("session/update", update)  # type: ignore[attr-defined]


class AgentV2:
    """Handlers for a v2 connection, over the agent that serves v1."""

    AUTH_METHODS: tuple[dict[str, str], ...] = (
        {
            "type": "agent",
            "methodId": PROVIDER_KEY_METHOD,
            "name": "LLM provider key",
            "description": "The configured provider's key, from the agent's environment "
            "(LLM_PROVIDER picks the prefix, then {PREFIX}_API_KEY): credentials never "
            "travel over ACP. auth/login checks that it resolves, else names what to set.",
        },
    )

    VENDOR_METHODS = (REWIND_METHOD, REWIND_POINTS_METHOD)  # named in initialize's _meta

    def __init__(self, agent: Any) -> None:
        self.agent = agent  # the AcpAgent serving v1 (server/agent.py imports this module)
        # the vendor methods are v1's until served here; rewind and steering are
        self.extensions: dict[str, Any] = {
            **rewind_handlers(agent.sessions),
            STEERING_METHOD: self.steer,
        }
        self._outbox: V2Outbox | None = None
        self.elicits_forms = False  # until initialize says the client takes form elicitations

    def factory(self, endpoint: Endpoint) -> SessionFactory:
        """The agent's session factory, wired to this connection's v2 view."""
        from agentao.server.opening import SessionFactory

        if self._outbox is None:
            self._outbox = V2Outbox(endpoint, self._options_of)
        a = self.agent
        elicit = self.elicits_forms

        def interaction(peer: Endpoint, session_id: str) -> V2Interaction:
            return V2Interaction(peer, session_id, elicit)

        return SessionFactory(
            endpoint, a.io, self._outbox, a.archive, a.settings, a.sandbox, interaction
        )

    async def initialize(self, params: v2.InitializeRequest) -> dict[str, Any]:
        self.accept_client(params.capabilities)
        return self.initialize_result()

    def accept_client(self, caps: v2.ClientCapabilities) -> None:
        """What a v2 client can do for us: form elicitation (for ask_user). The stdio
        handshake answers `initialize` itself and hands the capabilities on here."""
        elicitation = caps.elicitation
        self.elicits_forms = elicitation is not None and elicitation.form is not None

    def initialize_result(self) -> dict[str, Any]:
        """What `initialize` answers on v2 (also used by the stdio handshake)."""
        return initialize_response_v2(self)

    async def steer(self, params: dict[str, Any]) -> dict[str, Any]:
        """`_session/steering` (server/steering.py); from idle, a prompt inserted as any."""
        a = self.agent
        return await steer(params, a.sessions, a.settings, a._after_reply, self._steered_turn)

    async def _steered_turn(self, live: LiveSession, prompt: list[Any]) -> None:
        from agentao.protocol.v2 import schema as v2

        raw = {"sessionId": live.id, "prompt": prompt}
        await self.session_prompt(decode_strict(v2.PromptRequest, raw))

    # ---- auth ------------------------------------------------------------------------

    async def auth_login(self, params: v2.LoginAuthRequest) -> dict[str, Any]:
        """Honest about where the key lives: nothing is accepted over the wire (the schema
        has no field for it, and credentials never travel on ACP); the agent checks that
        the configured provider's key resolves, or answers -32000 naming the variables."""
        if params.method_id != PROVIDER_KEY_METHOD:
            raise InvalidParams(
                f"Invalid params: unknown methodId {params.method_id!r} "
                f"(only {PROVIDER_KEY_METHOD!r})",
                {"field": "methodId"},
            )
        self.agent.configured_llm()  # AuthRequired (-32000, data.variables) when the key is missing
        return {}

    async def auth_status(self, params: Any) -> dict[str, Any]:
        """Whether the configured provider's key resolves (configured, not proven valid:
        the schema's `authenticated`); `not_required` for the scripted provider, which
        needs none. The account is named by its provider, never by the key."""
        try:
            llm = self.agent.configured_llm()
        except AuthRequired:
            return {"state": "unauthenticated"}
        except AcpError:  # the provider itself is misconfigured: session/new says how
            return {"state": "unknown"}
        if llm.provider_id == SCRIPTED_PROVIDER:
            return {"state": "not_required"}
        return {"state": "authenticated", "accounts": [_account(llm.provider_id)]}

    async def auth_logout(self, params: Any) -> dict[str, Any]:
        """Nothing to forget: agentao stores no credential of its own (the key is in the
        environment of whoever started the agent, who alone can remove it)."""
        return {}

    # ---- session lifecycle -----------------------------------------------------------

    async def session_new(self, params: v2.NewSessionRequest, message: dict[str, Any]) -> Any:
        reply = await self.agent.session_new(params, message, commands=False)
        live = self.agent.sessions.get(reply.session_id)
        return {"sessionId": live.id, **session_result(live)}

    async def session_prompt(self, params: v2.PromptRequest) -> dict[str, Any]:
        from agentao.server.commands import prompt_body
        from agentao.server.models import supports_images
        from agentao.server.turns import claim, prompt_message, start_turn

        live = self.agent.sessions.get(params.session_id)
        blocks = _v1_blocks(params.prompt)
        message, shown = prompt_message(blocks, live.llm.model_value, supports_images(live))
        if not await claim(live, self.agent.settings.prompt_queue_depth):
            raise held_prompt_cancelled(live.id)  # dropped by session/cancel before insertion
        message_id = new_message_id()
        outbox = self._view_of(live)
        await live.send(state_update("running"))
        await live.send(outbox.view.user_message(live.id, shown, message_id))
        before = len(live.agent.turns)
        turn = start_turn(live, prompt_body(live, message, shown, self.agent.settings))
        self.agent._after_reply(self._finish(live, turn, before))
        return {"messageId": message_id}

    async def _finish(self, live: LiveSession, turn: asyncio.Task[TurnEnded], before: int) -> None:
        """The inserted prompt's turn, once it ends: the idle state with its stop reason."""
        try:
            await live.send(await _idle_after(live, turn, before))
        finally:
            release(live)  # the next held prompt is inserted after this idle (prompt_queue.py)

    async def session_cancel(self, params: Any, message: dict[str, Any]) -> None:
        await self.agent.session_cancel(params, message)

    async def session_resume(self, params: v2.ResumeSessionRequest, message: dict[str, Any]) -> Any:
        replay = replay_from(params_of(message).get("replayFrom"))
        live = await self.agent._restore(params, message)
        if replay:  # the history before the reply, as v1's load does
            await self.agent._replay(live)
        live.setup = self.agent._after_reply(self.agent._setup(live, False, commands=False))
        return session_result(live)

    async def session_fork(self, params: v2.ForkSessionRequest, message: dict[str, Any]) -> Any:
        """A new session with the source's stored history (server/fork.py)."""
        from agentao.server.fork import fork_session

        live = await fork_session(self.agent, params, message)
        live.setup = self.agent._after_reply(self.agent._setup(live, False, commands=False))
        return {"sessionId": live.id, **session_result(live)}

    async def session_status(self, params: v2.SessionStatusRequest) -> dict[str, Any]:
        """`open` (live here, with its state now) or `saved` (stored: resume it); an
        unknown session is -32002."""
        live = self.agent.sessions.find(params.session_id)
        if live is not None:
            state = state_now(live)
            return {"status": "open", **({"state": state} if state is not None else {})}
        if await self.agent.archive.exists(params.session_id):
            return {"status": "saved"}
        raise SessionNotFound(params.session_id)

    async def session_set_title(self, params: v2.SetSessionTitleRequest) -> dict[str, Any]:
        """A person's title for the session (server/session_title.py)."""
        from agentao.server.session_title import set_title

        return {"title": await set_title(self.agent, params.session_id, params.title)}

    async def session_close(self, params: v2.CloseSessionRequest) -> dict[str, Any]:
        await self.agent.session_close(params)
        return {}

    async def session_delete(self, params: v2.DeleteSessionRequest) -> dict[str, Any]:
        await self.agent.session_delete(params)
        return {}

    async def session_list(self, params: v2.ListSessionsRequest) -> Any:
        return to_builtins(await self.agent.session_list(params))

    async def session_set_config_option(
        self, params: v2.SetSessionConfigOptionRequest, message: dict[str, Any]
    ) -> dict[str, Any]:
        from agentao.server.commands import apply_mode

        raw = {k: v for k, v in params_of(message).items() if k not in V2_ONLY_SET_FIELDS}
        live = self.agent.sessions.get(params.session_id)
        if raw.get("configId") == MODE_CONFIG_ID:
            value = raw.get("value")
            if not isinstance(value, str):
                raise InvalidParams("Invalid params: value must be a mode id", {"field": "value"})
            _known_mode(live, value)
            await apply_mode(live, value)
        else:
            await self.agent.session_set_config_option(params, {**message, "params": raw})
        return {"configOptions": config_options(live)}

    # ---- tool calls --------------------------------------------------------------------

    async def tool_call_cancel(self, params: v2.CancelToolCallRequest) -> dict[str, Any]:
        """Stop one running tool call; its turn goes on (agent/stoppable.py)."""
        live = self.agent.sessions.get(params.session_id)
        refused = live.stoppable.stop(params.tool_call_id)
        if refused is not None:
            raise InvalidParams(
                f"Invalid params: tool call {params.tool_call_id!r} {STOP_REFUSED[refused]}",
                {"field": "toolCallId", "reason": refused.value},
            )
        return {}

    async def terminal_cancel(self, params: v2.CancelTerminalRequest) -> dict[str, Any]:
        """Kill one agent-owned terminal's command (agent/stoppable.py); the turn goes on."""
        live = self.agent.sessions.get(params.session_id)
        refused = live.stoppable.stop_terminal(params.terminal_id)
        if refused is not None:
            why = "has already exited" if refused is StopRefused.FINAL else "is unknown"
            raise InvalidParams(
                f"Invalid params: terminal {params.terminal_id!r} {why}",
                {"field": "terminalId", "reason": refused.value},
            )
        return {}

    def _options_of(self, session_id: str) -> list[dict[str, Any]] | None:
        live = self.agent.sessions.find(session_id)
        return None if live is None else config_options(live)

    def _view_of(self, live: LiveSession) -> V2Outbox:
        outbox = live.outbox
        assert isinstance(outbox, V2Outbox), "a v2 session sends through a V2Outbox"
        return outbox


async def _idle_after(live: LiveSession, turn: asyncio.Task[TurnEnded], before: int) -> Any:
    """The idle `state_update` that ends an inserted prompt's turn, with its stop reason
    (a failure is stopReason "error" with the error: never an error reply, never silence)."""
    from agentao.server.turns import finish_turn, usage_meta

    try:
        ended = await finish_turn(live, turn, before)
    except AcpError as exc:
        return state_update("idle", stopReason="error", error=exc.to_wire())
    except Exception as exc:  # the turn is over either way: say so, never go silent
        log.exception("session %s: the turn failed", live.id)
        error = InternalError(f"Internal error: {type(exc).__name__}").to_wire()
        return state_update("idle", stopReason="error", error=error)
    extra = {"_meta": meta} if (meta := usage_meta(ended)) else {}
    return state_update("idle", stopReason=ended.stop_reason, **extra)


def held_prompt_cancelled(session_id: str) -> RequestCancelled:
    """v2's answer to a held prompt that `session/cancel` dropped before it was inserted
    (-32800, as the schema's `$/cancel_request` text and codex-acp 2.6.0 answer it)."""
    return RequestCancelled(
        f"Request cancelled: session {session_id} was cancelled before the prompt was inserted",
        {"sessionId": session_id, "reason": "cancelled_before_insertion"},
    )


def session_result(live: LiveSession) -> dict[str, Any]:
    """What a v2 session/new, resume or fork result says of the session: its config, and
    its commands (in the result, so a client has them before the reply, as v1's load)."""
    from agentao.server.commands import commands_v2

    return {"configOptions": config_options(live), "availableCommands": commands_v2()}


def state_now(live: LiveSession) -> dict[str, Any] | None:
    """The session's foreground state as a snapshot: `requires_action` while a question
    waits on the person, `running` while a turn runs, `idle` with the last turn's stop
    reason; None (not reported) for a session with no finished turn to name."""
    if not live.state.idle:
        asking = any(not t.done() for t in live.interaction.pending)
        return {"state": "requires_action" if asking else "running"}
    stop = live.agent.turns[-1].stop_reason if live.agent.turns else None
    return None if stop is None else {"state": "idle", "stopReason": stop}


def _account(provider_id: str) -> dict[str, Any]:
    return {"label": f"{provider_id} API key (from the agent's environment)", "active": True}


def config_options(live: LiveSession) -> list[dict[str, Any]]:
    """v2's session config: the mode (v2 has no `modes`: a select option) and the model."""
    modes = mode_state(live.agent.mode_id, live.ceiling)
    mode = {
        "configId": MODE_CONFIG_ID,
        "name": "Mode",
        "category": "mode",
        "type": "select",
        "currentValue": modes.current_mode_id,
        "options": [
            {
                "value": m.id,
                "name": m.name,
                **({"description": m.description} if m.description else {}),
            }
            for m in modes.available_modes
        ],
    }
    return [mode, *(_option_v2(o) for o in model_options(live.llm, live.catalog))]


def _option_v2(option: Any) -> dict[str, Any]:
    wire = to_builtins(option)
    wire["configId"] = wire.pop("id", MODEL_CONFIG_ID)
    return wire


def _known_mode(live: LiveSession, value: str) -> None:
    """v2 says: an invalid value is -32602 and leaves the configuration unchanged."""
    modes = mode_state(live.agent.mode_id, live.ceiling).available_modes
    if value not in {m.id for m in modes}:
        allowed = ", ".join(m.id for m in modes)
        raise InvalidParams(
            f"Invalid params: unknown mode {value!r} (one of: {allowed})",
            {"field": "value", "configId": MODE_CONFIG_ID},
        )


def _v1_blocks(prompt: list[Any]) -> list[Any]:
    """v2's prompt content blocks as the session's (v1's) types: the blocks are the same
    on the wire."""
    return decode_strict(list[schema.ContentBlock], to_builtins(prompt))


__all__ = ["AgentV2", "V2Interaction", "V2Outbox", "config_options", "state_now"]
