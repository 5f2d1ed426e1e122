"""`AcpAgent`: the handler object the endpoint dispatches to (one method per ACP method).

Each method checks its params, finds or builds the `LiveSession`, and hands
the work to the module that owns it: `turns.py` (prompts; `prompt_queue.py` for those
that wait their turn), `steering.py` (`_session/steering`), `commands.py`
(slash commands, modes), `replay.py` (load), `models.py` (the catalog, the
window, switching models), `config_options.py` (the options' shapes),
`persistence.py` (the store).
Work a session does after it is announced (starting MCP servers, a startup
replay) is scheduled to run after the reply, so the `session/new` result is
on the wire before the session's first update. A `session/load` is the other
way round: its history, the commands and the MCP servers' notices all come
before its reply.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from agentao.agent.catalog import Catalog, CatalogError, configured_model, load_catalog
from agentao.agent.checkpoints import forget
from agentao.agent.config import LlmConfig, resolve_model, resolve_provider, split_model_value
from agentao.agent.providers.errors import MissingCredentials, ProviderNotFound
from agentao.agent.sandbox import Sandbox
from agentao.agent.session import AgentSession
from agentao.protocol import schema
from agentao.protocol.connection import params_of
from agentao.protocol.endpoint import Endpoint
from agentao.protocol.errors import AuthRequired, InvalidParams, InvalidRequest, SessionNotFound
from agentao.protocol.meta import MODE_ID
from agentao.server import config_options as opts
from agentao.server.capabilities import initialize_response
from agentao.server.client_env import ClientIo
from agentao.server.client_prompt import keep_client_prompt, read_client_prompt
from agentao.server.commands import apply_mode, commands_update, prompt_body
from agentao.server.gates import UpdateGate
from agentao.server.live import LiveSession, SessionRegistry
from agentao.server.mcp_config import checked_mcp_servers, fingerprint
from agentao.server.models import ModelDirectory, session_catalog, supports_images, switch_model
from agentao.server.opening import CHECKPOINTS_DIR, SessionFactory
from agentao.server.outbox import Outbox
from agentao.server.params import directories, directory
from agentao.server.persistence import CorruptSession, SessionArchive
from agentao.server.prompt_queue import wants_queue
from agentao.server.replay import history
from agentao.server.rewind import handlers as rewind_handlers
from agentao.server.settings import ServerSettings
from agentao.server.steering import STEERING_METHOD, steer
from agentao.server.turns import prompt_message, run_prompt, session_info
from agentao.server.updates import UpdateMapper, config_option_update
from agentao.server.v2 import AgentV2
from agentao.store.paths import state_dir

log = logging.getLogger("agentao.server")

SET_MODEL_METHOD = "_agentao.cn/set_model"


class AcpAgent:
    def __init__(
        self, archive: SessionArchive, settings: ServerSettings, resume: str | None = None
    ) -> None:
        self.archive = archive
        self.settings = settings
        self.endpoint: Endpoint | None = None
        self.sessions = SessionRegistry()
        self.gate = UpdateGate()  # until initialize says what the client advertised
        self.io = ClientIo()
        self._resume = resume  # seed C.2 "Startup resume": consumed by the first session/new
        self._background: set[asyncio.Task[Any]] = set()
        self.extensions = {
            SET_MODEL_METHOD: self.set_model,
            STEERING_METHOD: self.steer,
            **rewind_handlers(self.sessions),
        }
        self.sandbox = Sandbox(settings.sandbox)
        self._probing: asyncio.Future[Any] | None = None  # the sandbox probe, once started
        self.models = ModelDirectory(settings.models_timeout)
        self._v2: AgentV2 | None = None

    def for_version(self, version: int | None) -> object:
        """The handlers for a connection's protocol version (the endpoint asks): this object
        for v1 (or before `initialize` settles one), the v2 surface for v2 (server/v2.py)."""
        if version is None or version == 1:
            return self
        if self._v2 is None:
            self._v2 = AgentV2(self)
        return self._v2

    def configured_llm(self) -> LlmConfig:
        """The configured provider and model, its key resolved from the environment;
        -32000 with `data.variables` when the key is missing (v2's auth/login asks)."""
        return _resolve_llm(None)

    @property
    def factory(self) -> SessionFactory:
        assert self.endpoint is not None, "bind the endpoint first"
        if self._v2 is not None:  # a v2 connection: the same sessions, seen in v2
            return self._v2.factory(self.endpoint)
        outbox = Outbox(self.endpoint, self.gate, UpdateMapper())
        return SessionFactory(
            self.endpoint, self.io, outbox, self.archive, self.settings, self.sandbox
        )

    # ---- connection ------------------------------------------------------------------

    async def initialize(self, params: schema.InitializeRequest) -> dict[str, Any]:
        self.accept_client(params.client_capabilities)
        return initialize_response()

    def accept_client(self, caps: Any) -> None:
        """What the client can do: editor fs/terminal, capability-gated updates (v1); a v2
        client's capabilities (elicitation) go to the v2 surface."""
        if not isinstance(caps, schema.ClientCapabilities):
            self.for_version(2).accept_client(caps)  # type: ignore[attr-defined]
            return
        self.io = ClientIo.from_capabilities(caps)
        self.gate = UpdateGate(caps)

    # ---- session lifecycle -----------------------------------------------------------

    async def session_new(
        self, params: schema.NewSessionRequest, message: dict[str, Any], *, commands: bool = True
    ) -> schema.NewSessionResponse:
        """A new session (or `--resume`'s); its commands sent after the reply unless the
        caller puts them in its result (`commands` false: v2, server/v2.py)."""
        cwd = directory(params.cwd, "cwd")
        extra = directories(params.additional_directories, "additionalDirectories")
        raw_servers = params_of(message).get("mcpServers")
        client_prompt = read_client_prompt(params_of(message).get("systemPrompt"))
        servers = await checked_mcp_servers(raw_servers, str(cwd))
        llm = _resolve_llm(None)
        await self._probe_sandbox()
        resume, self._resume = self._resume, None
        live = await self._startup_resume(resume, cwd, servers) if resume is not None else None
        replay = live is not None
        if live is None:
            agent = AgentSession.new(cwd, llm, extra)
            agent.meta["mcp_fingerprint"] = fingerprint(raw_servers)
            keep_client_prompt(agent, client_prompt)
            catalog = await session_catalog(llm, self.models)
            live = self.factory.open(agent, llm, {}, servers, catalog)
            await self.archive.create(agent, live.engine)
        self.sessions.add(live)
        live.setup = self._after_reply(self._setup(live, replay=replay, commands=commands))
        return schema.NewSessionResponse(
            session_id=live.id,
            modes=opts.mode_state(live.agent.mode_id, live.ceiling),
            config_options=opts.model_options(live.llm, live.catalog),
        )

    async def session_load(
        self, params: schema.LoadSessionRequest, message: dict[str, Any]
    ) -> schema.LoadSessionResponse:
        live = await self._restore(params, message)
        # All of a load comes before its reply (the client knows the session's id already):
        # clients, and the conformance kit, take the reply as "the session is caught up".
        await self._replay(live)
        await self._setup(live, replay=False)
        return schema.LoadSessionResponse(
            modes=opts.mode_state(live.agent.mode_id, live.ceiling),
            config_options=opts.model_options(live.llm, live.catalog),
        )

    async def session_resume(
        self, params: schema.ResumeSessionRequest, message: dict[str, Any]
    ) -> schema.ResumeSessionResponse:
        live = self.sessions.find(params.session_id)
        if live is None or not live.state.idle:
            live = await self._restore(params, message)
            live.setup = self._after_reply(self._setup(live, replay=False))
        return schema.ResumeSessionResponse(
            modes=opts.mode_state(live.agent.mode_id, live.ceiling),
            config_options=opts.model_options(live.llm, live.catalog),
        )

    async def session_fork(
        self, params: schema.ForkSessionRequest, message: dict[str, Any]
    ) -> schema.ForkSessionResponse:
        """v1's unstable `session/fork`, as v2's (server/fork.py): the gateway's edit and
        resend forks a conversation's session over whichever version it speaks."""
        from agentao.server.fork import fork_session

        live = await fork_session(self, params, message)
        live.setup = self._after_reply(self._setup(live, replay=False))
        return schema.ForkSessionResponse(
            session_id=live.id,
            modes=opts.mode_state(live.agent.mode_id, live.ceiling),
            config_options=opts.model_options(live.llm, live.catalog),
        )

    async def session_list(self, params: schema.ListSessionsRequest) -> schema.ListSessionsResponse:
        summaries, cursor = await self.archive.page(params.cwd, params.cursor)
        infos = [
            schema.SessionInfo(
                session_id=s.id,
                cwd=s.cwd,
                additional_directories=s.additional_directories or None,
                title=s.title,
                updated_at=s.updated_at,
            )
            for s in summaries
        ]
        return schema.ListSessionsResponse(sessions=infos, next_cursor=cursor)

    async def session_set_title(
        self, params: schema.SetSessionTitleRequest
    ) -> schema.SetSessionTitleResponse:
        """v1's unstable `session/set_title`, as v2's (server/session_title.py)."""
        from agentao.server.session_title import set_title

        return schema.SetSessionTitleResponse(
            title=await set_title(self, params.session_id, params.title)
        )

    async def session_close(self, params: schema.CloseSessionRequest) -> None:
        live = self.sessions.get(params.session_id)
        self.sessions.remove(live.id)
        await live.close(self.settings.close_grace)

    async def session_delete(self, params: schema.DeleteSessionRequest) -> None:
        """Idempotent: a session never created or already deleted is gone all the same,
        which is what the caller asked for (the protocol says this SHOULD succeed)."""
        live = self.sessions.remove(params.session_id)
        if live is not None:
            await live.close(self.settings.close_grace)
        if await self.archive.delete(params.session_id):  # a stored id: its checkpoints too
            await asyncio.to_thread(forget, state_dir() / CHECKPOINTS_DIR, params.session_id)

    # ---- turns -----------------------------------------------------------------------

    async def session_prompt(self, params: schema.PromptRequest) -> schema.PromptResponse:
        live = self.sessions.get(params.session_id)
        images = supports_images(live)
        message, shown = prompt_message(params.prompt, live.llm.model_value, images)
        queue = self.settings.prompt_queue_depth if wants_queue(params.meta) else 0
        return await run_prompt(live, prompt_body(live, message, shown, self.settings), queue)

    async def steer(self, params: dict[str, Any]) -> dict[str, Any]:
        """`_session/steering`: words for the running turn (server/steering.py)."""
        return await steer(params, self.sessions, self.settings, self._after_reply)

    async def session_cancel(
        self, params: schema.CancelNotification, message: dict[str, Any]
    ) -> None:
        live = self.sessions.find(params.session_id)
        if live is None and self._cancel_child(params.session_id):
            return
        if live is None:
            if "id" in message:  # sent as a request: it needs an answer
                raise SessionNotFound(params.session_id)
            log.info("session/cancel for unknown session %s", params.session_id)
            return
        live.cancel()

    def _cancel_child(self, child_id: str) -> bool:
        """A child (a subagent) running in a live session's turn, cancelled alone: its
        parent's turn goes on (agent/child_runs.py). False when none is running."""
        return any(live.children.cancel(child_id) for live in self.sessions.all())

    # ---- modes and models ------------------------------------------------------------

    async def session_set_mode(self, params: schema.SetSessionModeRequest) -> dict[str, Any]:
        live = self.sessions.get(params.session_id)
        mode = await apply_mode(live, params.mode_id)
        return {"_meta": {MODE_ID: mode}}  # seed C.10's echo, where the schema allows it

    async def session_set_config_option(
        self, params: schema.SetSessionConfigOptionRequest, message: dict[str, Any]
    ) -> schema.SetSessionConfigOptionResponse:
        raw = opts.only_fields(params_of(message), opts.SET_CONFIG_FIELDS)
        live = self.sessions.get(params.session_id)
        value = opts.config_value(raw)
        provider, model = split_model_value(value, live.llm.provider_id)
        await switch_model(live, provider, model, self.settings.context)
        self._after_reply(live.emit(live.usage()))  # the new model's window
        options = opts.model_options(live.llm, live.catalog)
        return schema.SetSessionConfigOptionResponse(config_options=options)

    async def set_model(self, params: dict[str, Any]) -> dict[str, Any]:
        raw = opts.only_fields(params, opts.SET_MODEL_FIELDS)
        session_id = raw.get("sessionId")
        if not isinstance(session_id, str):
            raise InvalidParams(
                "Invalid params: sessionId must be a string", {"field": "sessionId"}
            )
        live = self.sessions.get(session_id)
        provider = live.llm.provider_id.lower()
        await switch_model(live, provider, opts.model_value(raw), self.settings.context)
        options = opts.model_options(live.llm, live.catalog)
        self._after_reply(live.send(config_option_update(options)))
        self._after_reply(live.emit(live.usage()))
        return {"model": live.llm.model}

    # ---- helpers ---------------------------------------------------------------------

    async def _restore(self, params: Any, message: dict[str, Any]) -> LiveSession:
        """A stored session made live again (session/load, session/resume); a
        `systemPrompt` it names replaces the stored one, none keeps it."""
        cwd = directory(params.cwd, "cwd")
        raw_servers = params_of(message).get("mcpServers")
        client_prompt = read_client_prompt(params_of(message).get("systemPrompt"))
        servers = await checked_mcp_servers(raw_servers, str(cwd))
        current = self.sessions.find(params.session_id)
        if current is not None:
            if not current.state.idle:
                raise InvalidRequest(
                    "Invalid Request: the session is running a prompt",
                    {"sessionId": current.id, "reason": "busy"},
                )
            self.sessions.remove(current.id)
            await current.close(self.settings.close_grace)
        agent, grants = await self._load(params.session_id)
        await self._probe_sandbox()
        if str(agent.cwd) != str(cwd):
            raise InvalidParams(
                f"Invalid params: cwd must match the session's cwd ({agent.cwd})", {"field": "cwd"}
            )
        if params.additional_directories:
            agent.additional_dirs = directories(
                params.additional_directories, "additionalDirectories"
            )
        if agent.meta.get("mcp_fingerprint") != fingerprint(raw_servers):
            log.info("session %s: MCP servers differ from last time; using the new list", agent.id)
            agent.meta["mcp_fingerprint"] = fingerprint(raw_servers)
        keep_client_prompt(agent, client_prompt)
        live = await self._open(agent, grants, servers)
        self.sessions.add(live)
        return live

    async def _open(self, agent: AgentSession, grants: dict[str, Any], servers: list[Any]) -> Any:
        """A stored session made live with its model (and that model's catalog)."""
        llm = self._llm_for(agent)
        catalog = await session_catalog(llm, self.models)
        return self.factory.open(agent, llm, grants, servers, catalog)

    async def _replay(self, live: LiveSession) -> None:
        """The history as updates, then how full the context is and the session's info."""
        for event in history(live.agent):
            await live.outbox.emit(live.id, event, live=False)
        await live.prepare()
        await live.emit(live.usage())
        await live.send(session_info(live))

    def warm(self) -> None:
        """Once `initialize` is answered: run the one-off sandbox probe and import what
        every session's tools need, in the background, so the first session/new finds
        them done instead of paying for them (tens of ms) on a client's clock."""
        self._probing = asyncio.ensure_future(asyncio.to_thread(self.sandbox.status))
        task = asyncio.ensure_future(asyncio.to_thread(_import_session_modules))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _probe_sandbox(self) -> None:
        """Run the one-off sandbox probe (a subprocess) off the event loop, once; once
        known, the answer costs nothing (no thread hop per session/new)."""
        if self.sandbox.known is not None:
            return
        if self._probing is None:
            self._probing = asyncio.ensure_future(asyncio.to_thread(self.sandbox.status))
        await asyncio.shield(self._probing)

    async def _load(self, session_id: str) -> tuple[AgentSession, dict[str, Any]]:
        try:
            loaded = await self.archive.load(session_id)
        except CorruptSession:
            raise InvalidRequest(
                "Invalid Request: the stored session cannot be loaded",
                {"sessionId": session_id, "reason": "corrupt"},
            ) from None
        if loaded is None:
            raise SessionNotFound(session_id)
        return loaded

    async def _startup_resume(
        self, resume: str, cwd: Path, servers: list[Any]
    ) -> LiveSession | None:
        """Seed C.2: the persisted session to resume, or None for any miss (silently)."""
        try:
            session_id = resume or await self.archive.latest_id()
            if session_id is None or session_id in self.sessions:
                return None
            agent, grants = await self._load(session_id)
            if agent.cwd != cwd:
                log.info(
                    "--resume: session %s belongs to %s; starting fresh", session_id, agent.cwd
                )
                return None
            return await self._open(agent, grants, servers)
        except (SessionNotFound, InvalidRequest, OSError) as exc:
            log.info("--resume %r: %s; starting a fresh session", resume, type(exc).__name__)
            return None

    def _llm_for(self, agent: AgentSession) -> LlmConfig:
        """The stored provider and model again, if the environment (or the catalog)
        still configures them."""
        try:
            llm = resolve_model(agent.provider_id, agent.model, _file_catalog())
        except MissingCredentials:
            llm = _resolve_llm(None)
            log.info("session %s: provider %s has no credentials now", agent.id, agent.provider_id)
        except ProviderNotFound:
            llm = _resolve_llm(None)
            log.info("session %s: provider %s is not configured now", agent.id, agent.provider_id)
        agent.provider_id, agent.model = llm.provider_id, llm.model
        return llm

    async def _setup(self, live: LiveSession, replay: bool, commands: bool = True) -> None:
        """After the reply: the commands (unless the reply had them: v2), a resumed
        history, then the MCP servers."""
        if commands:
            await live.send(commands_update())
        if replay:
            await self._replay(live)
        if live.mcp_servers:
            from agentao.agent.mcp import McpHub  # the mcp SDK loads only when it is used

            live.mcp = McpHub(live.mcp_servers, self.settings.mcp)
            for failure in await live.mcp.start():
                log.warning("session %s: %s", live.id, failure.message)
                await live.emit(failure.notice())

    def _after_reply(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """Run `coro` once the current handler has returned (its reply is written first)."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._background.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.warning("background work failed: %r", task.exception())

    def cancel_all(self) -> None:
        """The client is gone (EOF): stop every running turn now."""
        for live in self.sessions.all():
            live.cancel()

    async def shutdown(self) -> None:
        """Close every live session (turns cancelled, MCP servers stopped)."""
        sessions = self.sessions.all()
        await asyncio.gather(
            *(s.close(self.settings.close_grace) for s in sessions), return_exceptions=True
        )
        for task in list(self._background):
            task.cancel()


def _import_session_modules() -> None:
    """What every session loads on first use (the built-in tools and their local
    environment), imported ahead of it; the import lock makes a race with a session
    opening meanwhile harmless."""
    import agentao.agent.local_env
    import agentao.agent.tools.registry  # noqa: F401


def _file_catalog() -> Catalog | None:
    try:
        return load_catalog()
    except CatalogError:
        return None  # session_catalog reports it


def _resolve_llm(provider_id: str | None) -> LlmConfig:
    """The configured provider (None) or `provider_id`; one the catalog file describes
    resolves from it (its endpoint, kind and first model), its key from the environment."""
    try:
        if provider_id is None:
            return resolve_model(configured_model()[0], None, _file_catalog())
        return resolve_provider(provider_id)
    except MissingCredentials as exc:
        raise AuthRequired(
            f"Authentication required: LLM credentials are missing: {exc}",
            {"reason": "missing_credentials", "variables": exc.variables},
        ) from None


__all__ = ["AcpAgent"]
