"""The FastAPI application: routes, OpenAI-shaped errors, agent processes started with it.

    app = create_app(config, local_token=token)   # agents start in the app's lifespan
    uvicorn.run(app, host=..., port=...)

Every request passes, outermost first: `Guard` (Host, secrets in URLs, Origin),
CORS for the configured origins only, `BodyLimit`, `HolderRouting` (a conversation live
on another replica: the request goes there, holders.py), then the routes.

`serving.py` runs it for `agentao serve`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import Route

from agentao import __version__
from agentao.gateway import (
    acp_routes,
    anthropic_count,
    anthropic_messages,
    asking_api,
    conversations_api,
    errors,
    forks,
    keys_api,
    login,
    openai_chat,
    openai_responses,
    rewinds,
    tasks,
    web,
    workdirs,
)
from agentao.gateway.auth import CLIENT_HEADER, POLICY_HEADER
from agentao.gateway.bodylimit import BodyLimit
from agentao.gateway.config import GatewayConfig
from agentao.gateway.direct_posts import DirectPosts, Handler
from agentao.gateway.guard import Guard
from agentao.gateway.holders import HolderRouting
from agentao.gateway.service import Gateway, models_listing
from agentao.gateway.tool_bridge import BRIDGE_PATH, SSE_MESSAGES_PATH, SSE_PATH
from agentao.store.gateway import GatewayStore, open_store
from agentao.store.paths import ensure_state_dir
from agentao.store.target import shown

log = logging.getLogger("agentao.gateway")

# What a configured cross-origin page may send and read (CORS); our web UI marks its
# requests with CLIENT_HEADER, so none of them is a "simple" request.
CORS_REQUEST_HEADERS = (
    "authorization",
    "content-type",
    CLIENT_HEADER,
    POLICY_HEADER,
    "x-session-id",
)
CORS_RESPONSE_HEADERS = ("x-session-id", "x-task-id", "retry-after")


def create_app(
    config: GatewayConfig, store: GatewayStore | None = None, *, local_token: str | None
) -> FastAPI:
    """An app serving `config`'s agents; the store defaults to the configured one (a SQLite
    file or a PostgreSQL URL). Raises `StoreUnavailable` when its database cannot be reached.

    `local_token`: what a keyless gateway's callers must carry (`serve` passes the state
    directory's, see login.py); a caller embedding the app without keys says None, and
    every local user may then drive it. Ignored when the config has keys."""
    if store is None:
        target = _store_target(config)
        store = open_store(
            target,
            readers=config.limits.store_readers,
            pool_size=config.limits.store_pool_size,
            connect_seconds=config.limits.store_connect_seconds,
            # A replica stalled mid-transaction holds its leases' row locks: the server
            # ends that transaction once the lease would have run out anyway.
            idle_in_transaction_seconds=config.limits.lease_seconds,
            inline_commit_bytes=config.limits.store_inline_commit_bytes,
        )
        log.info("store: %s", shown(target))  # a URL's password is never logged
    gateway = Gateway(config, store, local_token)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        await gateway.start()
        try:
            async with gateway.tools.running():  # the caller's tools' MCP endpoint
                yield
        finally:
            await gateway.close()

    app = FastAPI(
        title="agentao gateway",
        version=__version__,
        lifespan=lifespan,
        docs_url="/docs",
        redoc_url=None,
        # No OpenTelemetry here: otherwise FastAPI asks for its providers on every request.
        telemetry={"tracing": False, "metrics": False, "logs": False},
    )
    app.state.gateway = gateway
    errors.install(app)
    _install_middleware(app, gateway)
    app.include_router(openai_chat.router)
    app.include_router(openai_responses.router)
    app.include_router(anthropic_count.router)
    app.include_router(anthropic_messages.router)
    app.include_router(tasks.router)
    app.include_router(asking_api.router)
    app.include_router(conversations_api.router)
    app.include_router(forks.router)
    app.include_router(rewinds.router)
    app.include_router(workdirs.router)
    app.include_router(keys_api.router)
    app.include_router(web.router)
    app.include_router(login.router)
    app.include_router(acp_routes.router)
    # The agents' MCP endpoint for the caller's tools: its own secret, no API key (tool_bridge.py).
    for path in (BRIDGE_PATH, SSE_PATH, SSE_MESSAGES_PATH):
        bridge = Route(path, endpoint=gateway.tools, methods=["GET", "POST", "DELETE"])
        app.router.routes.append(bridge)

    @app.get("/healthz")
    async def healthz() -> dict[str, Any]:
        agents = {
            name: {"live": p.live, "processes": len(p.workers)} for name, p in gateway.pools.items()
        }
        ok = all(a["live"] > 0 for a in agents.values())
        return {
            "status": "ok" if ok else "degraded",
            "version": __version__,
            "auth_required": gateway.auth.required,
            "agents": agents,
        }

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        """Ready for traffic: the store answers and every agent has a live process (a load
        balancer takes a replica out while this is 503)."""
        problems = [
            f"agent {n!r} has no live process" for n, p in gateway.pools.items() if not p.live
        ]
        try:
            await asyncio.wait_for(gateway.store.boots(), gateway.limits.store_connect_seconds)
        except Exception as exc:  # whatever the database says, the replica is not ready
            problems.append(f"the store does not answer: {type(exc).__name__}")
        body = {"status": "not ready" if problems else "ready", "problems": problems}
        return JSONResponse(body, status_code=503 if problems else 200)

    @app.get("/v1/models")
    async def list_models(request: Request) -> dict[str, Any]:
        principal = gateway.principal(request)
        return {"object": "list", "data": models_listing(gateway, principal)}

    @app.get("/v1/models/{model_id:path}")
    async def get_model(model_id: str, request: Request) -> dict[str, Any]:
        principal = gateway.principal(request)
        for entry in models_listing(gateway, principal):
            if entry["id"] == model_id:
                return entry
        raise errors.NotFound(f"the model {model_id!r} does not exist", param="model")

    return app


def _install_middleware(app: FastAPI, gateway: Gateway) -> None:
    # Added innermost first: a request meets Guard, then CORS, then BodyLimit, then the
    # holder step (a request for a conversation live on another replica goes there),
    # then a turn's POST goes straight to its handler (direct_posts.py).
    config = gateway.config
    app.add_middleware(DirectPosts, find=_direct_post)
    app.add_middleware(HolderRouting, gateway=gateway)
    app.add_middleware(BodyLimit, max_bytes=config.limits.max_request_bytes)
    if config.web.allowed_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=config.web.allowed_origins,
            allow_methods=("GET", "POST", "DELETE"),
            allow_headers=CORS_REQUEST_HEADERS,
            expose_headers=CORS_RESPONSE_HEADERS,
            allow_private_network=True,  # the operator chose to trust these pages
        )
    app.add_middleware(Guard, config=config)


# The POSTs of every turn, by path (direct_posts.py); remote ACP's are acp_routes'.
_DIRECT_POSTS: dict[str, Handler] = {
    "/v1/chat/completions": openai_chat.chat_completions,
    "/v1/responses": openai_responses.create_response,
    "/v1/messages": anthropic_messages.messages,
}


def _direct_post(path: str) -> Handler | None:
    return _DIRECT_POSTS.get(path) or acp_routes.direct_post(path)


def _store_target(config: GatewayConfig) -> str:
    if config.store:
        return config.store
    return str(ensure_state_dir() / "gateway.sqlite3")


__all__ = ["create_app"]
