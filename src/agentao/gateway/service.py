"""The gateway's running parts in one place, and the request plumbing every route shares.

`Gateway` holds the config, the store, the agent pools, the conversation
registry, the task hub, the permission desk and this process's `Boot` (the owner
of the rows it writes; `Recovery` settles what dead owners left); `app.py` builds
one and puts it on `app.state.gateway`. Routes call `gateway.principal(request)`,
`gateway.decode(request, Type)` and `gateway.resolve_model(...)` so that
authentication, JSON bodies and model names behave the same everywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import msgspec
from starlette.requests import HTTPConnection, Request

from agentao.gateway.asking import QuestionDesk
from agentao.gateway.auth import POLICY_HEADER, Authenticator, Principal
from agentao.gateway.batches import WriterBackoff
from agentao.gateway.boots import this_boot
from agentao.gateway.budgets import Budgets
from agentao.gateway.config import POLICY_ORDER, GatewayConfig, Policy
from agentao.gateway.confine import probe
from agentao.gateway.errors import BadRequest, NotFound, UnsupportedMediaType
from agentao.gateway.identifiers import check_model
from agentao.gateway.peers import Peers
from agentao.gateway.permissions import PermissionDesk
from agentao.gateway.pool import AgentPool, Spawning
from agentao.gateway.recovery import Recovery
from agentao.gateway.remote.service import RemoteAcp
from agentao.gateway.replicas import Replica, advertised_url
from agentao.gateway.response_builder import LiveResponse
from agentao.gateway.sessions import Conversations
from agentao.gateway.tasklog import TaskHub
from agentao.gateway.tool_bridge import ToolBridges, bridge_url
from agentao.gateway.turn_line import TurnLine
from agentao.store.gateway import GatewayStore
from agentao.store.paths import ensure_state_dir

T = TypeVar("T")
log = logging.getLogger("agentao.gateway")
LOG_SWEEP_SECONDS = 3600.0  # how often logs past `log_retention_days` are pruned


@dataclass(frozen=True, slots=True)
class ModelChoice:
    """`agent` or `agent/model` from a request's `model` field."""

    agent: str
    model: str | None  # the agent's own model id, None for its default
    alias: str | None = None  # the `[models]` alias the request named, if it named one

    @property
    def name(self) -> str:
        """The model an answer names: what the request asked for."""
        if self.alias:
            return self.alias
        return f"{self.agent}/{self.model}" if self.model else self.agent


async def _every(period: float, sweep: Callable[[], Awaitable[int]], what: str) -> None:
    """Run `sweep` every `period` seconds for good; log how many it closed."""
    while True:
        await asyncio.sleep(period)
        try:
            closed = await sweep()
        except Exception:  # the next sweep tries again
            log.exception("closing %s failed", what)
            continue
        if closed:
            log.info("closed %d %s", closed, what)


class Gateway:
    def __init__(
        self, config: GatewayConfig, store: GatewayStore, local_token: str | None = None
    ) -> None:
        self.config = config
        self.limits = config.limits
        self.store = store
        self.boot = this_boot()
        self.recovery = Recovery(store, self.boot)
        self.auth = Authenticator(config, local_token)
        self.replica = Replica(store.cluster, self.boot.id, self.recovery, self.limits)
        self.peers = Peers(self.replica, config)
        self.hub = TaskHub(store, self.boot.id, self.replica.stored, WriterBackoff.of(self.limits))
        self.desk = PermissionDesk(self.limits.permission_wait_max_seconds)
        self.pools: dict[str, AgentPool] = {}
        self.aliases: dict[str, str] = dict(config.models)  # `[models]` (config.py)
        self.live_responses: dict[str, LiveResponse] = {}  # responses being produced
        self.background: set[asyncio.Task[None]] = set()  # background responses and tasks
        self.loop: asyncio.AbstractEventLoop | None = None  # the loop serving, once started
        self.conversations = Conversations(
            store, self.pools, self.hub, self.desk, self.limits, self.replica, config.ceiling_of
        )
        # `[[keys]] tokens_per_day`, `usd_per_day`: counted in the store, shared by replicas.
        self.budgets = Budgets(config.keys, store.spend, config.prices)
        self.line = TurnLine()  # requests waiting for a busy conversation (turn_line.py)
        self.conversations.charge = self.budgets.charge
        # The caller's own tools, as an MCP server per conversation (tool_bridge.py).
        self.tools = ToolBridges(self.limits.tool_result_seconds, bridge_url(config))
        spawning = Spawning(
            outer=probe(config.agent_sandbox),
            state_dir=ensure_state_dir(),
            allow_unconfined=config.allow_unconfined_agents,
            mcp_public_only=not config.mcp.allow_private,
            trusted_mcp_url=self.tools.url,
        )
        for spec in config.agents:
            self.pools[spec.name] = AgentPool(
                spec, self.limits, self.conversations.permission, spawning
            )
        # Sets the pools' file handler and an ask_user one (replaced by the desk's below,
        # which asks the remote clients through it): the agents' calls reach remote clients.
        self.remote = RemoteAcp(self.conversations, store, self.replica, self.peers, config.mcp)
        self.remote.admit = self.budgets.check  # every face's new turn is held to budgets
        # The agents' ask_user: on the running task's log and to the remote clients too.
        self.questions = QuestionDesk(
            self.conversations,
            self.remote.relays.ask_user,
            self.limits.permission_deadline_seconds,
            self.limits.max_answer_chars,
            self.limits.permission_wait_max_seconds,
        )
        for pool in self.pools.values():
            pool.ask_user = self.questions.ask_user

    async def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        await self.recovery.start()
        await self.replica.start(advertised_url(self.config))
        for name, pool in self.pools.items():
            await pool.start(self.ceilings_of(name))
        loop = asyncio.get_running_loop()
        if self.limits.session_idle_seconds > 0:
            self.background.add(loop.create_task(self._sweep()))
        self.background.add(loop.create_task(self._sweep_remote()))
        if self.limits.log_retention_days > 0:
            self.background.add(loop.create_task(self._sweep_logs()))

    async def _sweep(self) -> None:
        idle = self.limits.session_idle_seconds

        async def sweep() -> int:
            closed = await self.conversations.sweep(idle)
            # A conversation no longer in memory keeps no tool bridge (a new one is made,
            # with a new secret, by its next request offering tools).
            self.tools.sweep(lambda conv_id: self.conversations.live(conv_id) is not None)
            return closed

        await _every(min(60.0, idle / 4), sweep, "idle agent sessions")

    async def _sweep_remote(self) -> None:
        period = min(60.0, self.limits.remote_idle_seconds / 4)
        await _every(period, self.remote.sweep, "idle remote ACP connections")

    async def _sweep_logs(self) -> None:
        await _every(LOG_SWEEP_SECONDS, self.prune_logs, "conversation logs past retention")

    async def prune_logs(self) -> int:
        """Delete the logs of conversations idle longer than `log_retention_days` (0:
        none, ever); how many rows of frames went."""
        if self.limits.log_retention_days <= 0:
            return 0
        cutoff = time.time() - self.limits.log_retention_days * 86400
        return await self.store.prune_log(cutoff)

    async def end_streams(self) -> None:
        """The server stops: end the streams that would never end by themselves, and the
        agents' calls of the caller's tools, which would wait for a caller (tool_bridge.py)."""
        self.tools.stop_waiting()
        await self.remote.close_all()

    async def close(self) -> None:
        for task in list(self.background):
            task.cancel()
        await self.remote.stop()
        for pool in self.pools.values():
            await pool.close()
        try:  # what the turns stored as they ended, then ours still in flight is settled
            await self.hub.flush()
            await self.recovery.stop()
        except Exception:  # the next gateway on this store settles them
            log.exception("could not settle this gateway's responses and tasks in flight")
        await self.replica.stop()  # its heartbeat too, even with the store gone
        self.hub.close()
        with contextlib.suppress(Exception):
            await self.peers.close()
        with contextlib.suppress(Exception):
            await self.store.close()

    def ceilings_of(self, agent: str) -> tuple[str, ...]:
        """The ceilings of the keys that may use `agent` (weakest first): its processes."""
        if not self.config.keys:
            return ("all",)
        used = {k.ceiling for k in self.config.keys if k.allows(agent)}
        return tuple(p for p in POLICY_ORDER if p in used)

    # ---- per request ----------------------------------------------------------------------

    def principal(self, conn: HTTPConnection) -> Principal:
        return self.auth.principal(conn)

    async def decode(self, request: Request, type_: type[T]) -> T:
        """The JSON body as `type_`: 415 unless declared JSON, 400 naming a bad field.

        (Above `max_request_bytes`, `BodyLimit` raises 413 while the body is read.)
        """
        check_json(request.headers.get("content-type"))
        body = await request.body()
        try:
            return msgspec.json.decode(body, type=type_)
        except msgspec.ValidationError as exc:
            raise BadRequest(f"invalid request: {exc}", param=_param_of(exc)) from None
        except msgspec.DecodeError as exc:
            raise BadRequest(f"the body is not valid JSON: {exc}", code="invalid_json") from None
        except RecursionError:  # the decoder's own guard: arrays/objects nested ~1,000 deep
            raise BadRequest(
                "the body's JSON is nested too deeply to decode", code="json_too_deep"
            ) from None

    def resolve_model(self, principal: Principal, model: str, param: str = "model") -> ModelChoice:
        """`agent`, `agent/model` or a `[models]` alias of one: a well-formed name, an agent
        that exists and is allowed for this key, and (once the agent has listed them) one
        of its own models. An unknown name is a 404 listing the names this key may use."""
        target = self.aliases.get(check_model(model, param))
        if target is not None:
            return replace(self._resolve(principal, target, param), alias=model)
        return self._resolve(principal, model, param)

    def _resolve(self, principal: Principal, model: str, param: str) -> ModelChoice:
        agent, _, own = model.partition("/")
        pool = self.pools.get(agent)
        if pool is None:
            raise NotFound(
                f"the model {model!r} does not exist (models: {', '.join(self.names(principal))})",
                param=param,
                code="model_not_found",
            )
        principal.check_agent(agent)
        if own and pool.info.models and own not in pool.info.models:
            raise NotFound(
                f"the agent {agent!r} has no model {own!r} (its models: "
                f"{', '.join(pool.info.models)})",
                param=param,
                code="model_not_found",
            )
        return ModelChoice(agent, own or None)

    def names(self, principal: Principal) -> list[str]:
        """The agents and aliases `principal` may name, sorted."""
        agents = [a for a in self.pools if principal.agents is None or a in principal.agents]
        aliases = [a for a, t in self.aliases.items() if t.partition("/")[0] in agents]
        return sorted(agents + aliases)

    def policy(self, principal: Principal, request: Request, body_value: str | None) -> Policy:
        return principal.choose_policy(body_value or request.headers.get(POLICY_HEADER))


def check_json(content_type: str | None) -> None:
    """415 unless the body is declared JSON. A page may POST text/plain or a form to
    another origin without a CORS preflight; it cannot send `application/json` so."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    ):
        return
    raise UnsupportedMediaType(
        f"the body must be JSON sent with 'Content-Type: application/json', not "
        f"{content_type or 'no content type'!r}",
        code="unsupported_content_type",
    )


def _param_of(exc: msgspec.ValidationError) -> str | None:
    # msgspec says "... - at `$.messages[0].role`"
    text = str(exc)
    if "`$." in text:
        return text.split("`$.", 1)[1].split("`", 1)[0]
    return None


def models_listing(gateway: Gateway, principal: Principal) -> list[dict[str, Any]]:
    """`/v1/models` entries: every agent this key may use, and its own models."""
    out = []
    for name, pool in gateway.pools.items():
        if principal.agents is not None and name not in principal.agents:
            continue
        out.append(_model_entry(name, pool))
        out.extend(_model_entry(f"{name}/{m}", pool) for m in pool.info.models)
        for alias, target in gateway.aliases.items():
            if target.partition("/")[0] == name:
                out.append({**_model_entry(alias, pool), "x_alias_of": target})
    return out


def _model_entry(model_id: str, pool: AgentPool) -> dict[str, Any]:
    return {
        "id": model_id,
        "object": "model",
        "created": 0,
        "owned_by": "agentao",
        "x_agent": {
            "name": pool.spec.name,
            "title": pool.info.title,
            "version": pool.info.version,
            "processes": len(pool.workers),
            "live": pool.live,
            "load_session": pool.info.load_session,
            "images": pool.info.images,
        },
    }


__all__ = ["Gateway", "ModelChoice", "check_json", "models_listing"]
