"""The client side of the wire: the methods an agent calls on us.

The endpoint looks methods up by wire name (`fs/read_text_file` ->
`fs_read_text_file`, extensions in `extensions`). Each one delegates to a
replaceable handler (`Handlers`), after the checks that are not optional:
a method whose capability was not advertised is not found (-32601, see
capabilities.py), the session must be known, paths stay inside its workspace,
every `terminal/create` is put to the permission handler as a tool call of
kind `execute` (an agent need not ask before it runs a command, so the client
asks for it), and a pending permission or ask_user question is answered
`cancelled` / unavailable the moment its turn is cancelled.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agentao.client.capabilities import serves
from agentao.client.children import SUBAGENT_UPDATE, ChildLinks
from agentao.client.events import PermissionDecision, Update
from agentao.client.files import FileHandler, Workspace
from agentao.client.permissions import (
    PermissionAnswer,
    PermissionHandler,
    PermissionRequest,
    parse_options,
)
from agentao.client.state import SessionState
from agentao.client.terminals import CommandRefused, TerminalHandler, command_request
from agentao.protocol import meta
from agentao.protocol.connection import params_of
from agentao.protocol.errors import InvalidParams, MethodNotFound, SessionNotFound
from agentao.protocol.schema import UnknownVariant

log = logging.getLogger("agentao.client")

ASK_USER_UNAVAILABLE = "(user unavailable)"
AskUser = Callable[[str, str], Awaitable[str]]  # (session id, question) -> answer
Extension = Callable[[dict[str, Any]], Awaitable[Any]]
T = TypeVar("T")
Served = TypeVar("Served", bound=Callable[..., Awaitable[Any]])


def advertised_only(method: str) -> Callable[[Served], Served]:
    """Serve `method` only if its capability was advertised (capabilities.GATES), else -32601."""

    def wrap(fn: Served) -> Served:
        @functools.wraps(fn)
        async def gated(self: ClientSide, *args: Any) -> Any:
            if not serves(self.capabilities, method):
                raise MethodNotFound(method)
            return await fn(self, *args)

        return gated  # type: ignore[return-value]

    return wrap


@dataclass(frozen=True, slots=True)
class Handlers:
    """Replacements for the default handlers (None keeps the default)."""

    files: FileHandler | None = None
    terminals: TerminalHandler | None = None
    permission: PermissionHandler | None = None
    ask_user: AskUser | None = None
    extensions: Mapping[str, Extension] = field(default_factory=dict)  # "_vendor/method" -> fn


class ClientSide:
    """The handler object bound to the client's endpoint."""

    def __init__(
        self,
        files: FileHandler,
        terminals: TerminalHandler,
        permission: PermissionHandler,
        ask_user: AskUser | None,
        max_backlog: int,
        capabilities: Mapping[str, Any],
    ) -> None:
        self.capabilities = capabilities  # sent in `initialize`; decides what is served
        self.files = files
        self.terminals = terminals
        self.permission = permission
        self.ask_user = ask_user
        self.max_backlog = max_backlog
        self.states: dict[str, SessionState] = {}
        self.opening: list[Workspace] = []  # workspaces of session/new calls in flight
        self.extensions: dict[str, Extension] = {"_agentao.cn/ask_user": self._ask_user}
        self.children = ChildLinks()  # which session is whose child (subagent_update)
        self.shows_children = False  # pass a child's updates to its root's reader

    def state(self, session_id: str) -> SessionState:
        st = self.states.get(session_id)
        if st is None:
            st = self.states[session_id] = SessionState(session_id, self.max_backlog)
        return st

    def workspace(self, session_id: Any) -> Workspace:
        st = self.states.get(session_id) if isinstance(session_id, str) else None
        if st is not None and st.workspace is None:  # a child works in its root's workspace
            st = self.states.get(self.children.root(st.session_id))
        if st is not None and st.workspace is not None:
            return st.workspace
        if self.opening:  # asked while its session/new is still being answered
            ws = self.opening[-1]
            return Workspace(str(session_id), ws.roots)
        raise SessionNotFound(str(session_id))

    # ---- session/update -------------------------------------------------------------

    def session_update(self, params: Any, message: dict[str, Any]) -> None:
        # `params` decoded as a SessionNotification, so sessionId is a string and the
        # update has a string tag (an unknown kind is an UnknownVariant). The message holds
        # the update as its bytes (connection.py's `_receive_passed`), or, when its line
        # needed a repair, as the object received.
        wire = message["params"]["update"]
        value = params.update
        if type(value) is UnknownVariant:
            kind, value = value.raw["sessionUpdate"], None
        else:
            kind = value.__struct_config__.tag
        st = self.states.get(params.session_id) or self.state(params.session_id)
        update = st.apply(kind, value, wire)
        st.stream.push_update(update)
        self.follow(update)

    def follow(self, update: Update) -> None:
        """After `update` is in its own session's stream: a child's goes to its root's
        reader too, in order (client/children.py)."""
        children = self.children
        if update.kind == SUBAGENT_UPDATE:  # the only kind `note` reads
            children.note(update.session_id, update.kind, update.value)
        if not self.shows_children or not children.parents:
            return  # nobody reads it at a root (or nobody is a child): once per update
        root = children.root(update.session_id)
        if root != update.session_id:
            self.state(root).stream.push_event(update)

    # ---- session/request_permission -------------------------------------------------

    async def session_request_permission(
        self, params: Any, message: dict[str, Any]
    ) -> dict[str, Any]:
        raw = params_of(message)
        st = self.state(_session_of(params, raw))
        tool_raw = raw.get("toolCall") if isinstance(raw.get("toolCall"), dict) else {}
        tool = st.upsert_tool_call(tool_raw)  # logs one never announced
        request = PermissionRequest(
            st.session_id,
            tool.tool_call_id if tool else "",
            tool.title if tool else "",
            tool.kind if tool else "other",
            parse_options(raw.get("options")),
            dict(tool.raw) if tool else dict(tool_raw),
            _root_or_none(self.children.root(st.session_id), st.session_id),
        )
        decision = await self._decide(st, request)
        if decision.option_id is None:
            return {"outcome": {"outcome": "cancelled"}}
        result: dict[str, Any] = {
            "outcome": {"outcome": "selected", "optionId": decision.option_id}
        }
        if decision.reason:
            result["_meta"] = {meta.REASON: decision.reason}
        return result

    async def _decide(self, st: SessionState, request: PermissionRequest) -> PermissionDecision:
        """Ask the permission handler (racing the turn's cancel: a child's question, its
        root session's); count and stream its answer (a child's to its root too)."""
        root = self.state(self.children.root(st.session_id))
        answer, by_turn = await _unless_cancelled(root, self.permission(request), None)
        option_id, reason = _known(PermissionAnswer.of(answer), request)
        chosen = next((o for o in request.options if o.option_id == option_id), None)
        approved = chosen is not None and chosen.allows
        if not approved and not by_turn:
            st.denied += 1
        decision = PermissionDecision(request, option_id, approved, by_turn, reason)
        st.stream.push_event(decision)
        if root is not st and self.shows_children:
            root.stream.push_event(decision)
        return decision

    async def _ask_user(self, params: dict[str, Any]) -> dict[str, Any]:
        st = self.state(_session_of(None, params))
        question = params.get("question")
        if self.ask_user is None or not isinstance(question, str):
            return {"answer": ASK_USER_UNAVAILABLE}
        answer, _ = await _unless_cancelled(st, self.ask_user(st.session_id, question), None)
        return {"answer": answer if isinstance(answer, str) else ASK_USER_UNAVAILABLE}

    # ---- fs/* -----------------------------------------------------------------------

    @advertised_only("fs/read_text_file")
    async def fs_read_text_file(self, params: Any) -> dict[str, Any]:
        ws = self.workspace(params.session_id)
        content = await self.files.read_text_file(ws, params.path, params.line, params.limit)
        return {"content": content}

    @advertised_only("fs/write_text_file")
    async def fs_write_text_file(self, params: Any) -> dict[str, Any]:
        ws = self.workspace(params.session_id)
        await self.files.write_text_file(ws, params.path, params.content)
        return {}

    # ---- terminal/* -----------------------------------------------------------------

    @advertised_only("terminal/create")
    async def terminal_create(self, params: Any, message: dict[str, Any]) -> dict[str, Any]:
        ws = self.workspace(params.session_id)
        raw = params_of(message)
        request = command_request(ws, raw)  # checks the command and its cwd before asking
        decision = await self._decide(self.state(ws.session_id), request)
        if not decision.approved:
            raise CommandRefused(request, decision.reason or "the command was not approved")
        return {"terminalId": await self.terminals.create(ws, raw)}

    @advertised_only("terminal/output")
    async def terminal_output(self, params: Any) -> dict[str, Any]:
        return await self.terminals.output(self.workspace(params.session_id), params.terminal_id)

    @advertised_only("terminal/wait_for_exit")
    async def terminal_wait_for_exit(self, params: Any) -> dict[str, Any]:
        ws = self.workspace(params.session_id)
        return await self.terminals.wait_for_exit(ws, params.terminal_id)

    @advertised_only("terminal/kill")
    async def terminal_kill(self, params: Any) -> dict[str, Any]:
        await self.terminals.kill(self.workspace(params.session_id), params.terminal_id)
        return {}

    @advertised_only("terminal/release")
    async def terminal_release(self, params: Any) -> dict[str, Any]:
        await self.terminals.release(self.workspace(params.session_id), params.terminal_id)
        return {}


def _known(answer: PermissionAnswer, request: PermissionRequest) -> tuple[str | None, str]:
    """The answer's option id if the agent offered it (else `cancelled`), and its reason."""
    option_id = answer.option_id
    if option_id is not None and not any(o.option_id == option_id for o in request.options):
        log.warning("permission handler chose unknown option %r: answering cancelled", option_id)
        return None, ""
    return option_id, answer.reason


async def _unless_cancelled(st: SessionState, work: Awaitable[T], fallback: T) -> tuple[T, bool]:
    """Run `work` unless the session's turn is cancelled first: (result, cancelled_by_turn)."""
    if st.cancelled.is_set():
        _close(work)
        return fallback, True
    task = asyncio.ensure_future(work)
    cancelled = asyncio.ensure_future(st.cancelled.wait())
    try:
        await asyncio.wait({task, cancelled}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        cancelled.cancel()
        if not task.done():
            task.cancel()
    if not task.done() or task.cancelled():
        return fallback, True
    if task.exception() is not None:  # a broken handler must not leave the agent waiting
        log.error("client handler failed: %r; answering with the safe default", task.exception())
        return fallback, False
    return task.result(), False


def _close(work: Awaitable[Any]) -> None:
    close = getattr(work, "close", None)
    if close is not None:
        close()  # never awaited: avoid the "coroutine was never awaited" warning


def _session_of(params: Any, raw: dict[str, Any]) -> str:
    session_id = getattr(params, "session_id", None) or raw.get("sessionId")
    if not isinstance(session_id, str):
        raise InvalidParams(
            'Invalid params: "sessionId" must be a string', {"sessionId": session_id}
        )
    return session_id


def _root_or_none(root: str, session_id: str) -> str | None:
    """A question's root session: None for a session's own (`PermissionRequest`)."""
    return None if root == session_id else root


__all__ = [
    "ASK_USER_UNAVAILABLE",
    "AskUser",
    "ClientSide",
    "Extension",
    "Handlers",
    "advertised_only",
]
