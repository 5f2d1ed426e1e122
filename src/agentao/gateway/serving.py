"""`agentao serve`'s process: bind first, then start the agents, then say where it listens.

Theory of operation. The listening socket is bound before anything else runs, so a
port already taken is a clear error and a non-zero exit while no agent process has
been started and no line has claimed to listen. The port the kernel gave (`--port 0`
asks for any free one) is known from then on: uvicorn is told it, and the gateway's
own "listening on" line is printed only once the app's startup (the agent processes)
is complete and the socket accepts connections.

Before it serves, `settle_heap` sets the garbage collector up for a long-lived process
that relays streams: what is loaded is frozen out of its scans, and its young generation
is scanned only past `[limits] gc_young_objects` (updates in flight to the store are
not rescanned every ~70 of them).

The loop is asyncio's unless `AGENTAO_EVENT_LOOP=uvloop` (agentao/loops.py), named to
uvicorn outright (never `auto`, which takes uvloop wherever it is installed); a value that names no loop is refused before binding,
exit code 2 (a bad setting, as a bad config).
"""

from __future__ import annotations

import gc
import logging
import socket
import sys
from dataclasses import replace
from typing import Any

import uvicorn

from agentao import loops
from agentao.gateway.config import GatewayConfig, Limits
from agentao.gateway.http11 import GatewayHttpProtocol
from agentao.gateway.login import login_url
from agentao.gateway.logs import redact_root_handlers, uvicorn_log_config
from agentao.local_token import LocalTokenError, ensure_token, token_path
from agentao.store.paths import ensure_state_dir
from agentao.store.target import StoreUnavailable

LISTEN_BACKLOG = 2048  # uvicorn's default backlog for the sockets it binds itself
EXIT_BIND_FAILED = 1  # like any other failure to start (2 is for a bad config)
EXIT_STORE_UNAVAILABLE = 1  # the store's database cannot be reached
EXIT_LOCAL_TOKEN = 1  # the state directory's token file is not one we can trust
EXIT_BAD_EVENT_LOOP = 2  # AGENTAO_EVENT_LOOP names no loop: a bad setting, as a bad config


class BindError(OSError):
    """The gateway's address could not be bound; the message says which and why."""


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on `host:port` (IPv6 when the host is an IPv6 literal)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(LISTEN_BACKLOG)
    except OSError as exc:
        sock.close()
        why = exc.strerror or str(exc)
        raise BindError(f"cannot listen on {url_of(host, port)}: {why}") from None
    sock.set_inheritable(True)
    return sock


def url_of(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{port}"


class GatewayServer(uvicorn.Server):
    """uvicorn's server, ending the gateway's open-ended streams when it stops.

    uvicorn waits for every response under way before it stops, and a remote ACP event
    stream never ends by itself: without this a Ctrl-C would wait on every connected
    editor. The streams end first (the clients reconnect, with `Last-Event-ID`, to the
    next gateway), then uvicorn stops as usual.
    """

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        gateway = getattr(getattr(self.config.app, "state", None), "gateway", None)
        if gateway is not None:
            await gateway.end_streams()
        await super().shutdown(sockets=sockets)


class _AnnouncingServer(GatewayServer):
    """The gateway's server, printing its address once it really serves."""

    def __init__(self, config: uvicorn.Config, banner: str) -> None:
        super().__init__(config)
        self.banner = banner

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started and not self.should_exit:
            print(self.banner, file=sys.stderr, flush=True)


def settle_heap(limits: Limits) -> None:
    """Tune the garbage collector for a long-lived server, once its app is built."""
    # What is loaded by now (FastAPI, pydantic, our modules: some 100,000 objects) lives as
    # long as the process. Frozen, it is no longer scanned by every full collection: those
    # took ~40 ms each, several times a minute under a stream of updates.
    gc.collect()
    gc.freeze()
    # A streamed answer's updates live until the store's next batch holds them (hundreds
    # at a time, each a few dicts): at the default 700 a young scan ran every ~70 updates,
    # found them alive and promoted them to be scanned again. Above what is in flight, the
    # young generation is mostly dead by the time it is scanned (`gc_young_objects`).
    _young, *older = gc.get_threshold()
    gc.set_threshold(limits.gc_young_objects, *older)


def serve(config: GatewayConfig, *, log_level: str = "info") -> int:
    """Run the gateway until interrupted (what `agentao serve` does); the exit code."""
    from agentao.gateway.app import create_app

    config.check_bind()
    try:
        event_loop = loops.event_loop_name()
    except loops.EventLoopSettingError as exc:
        print(f"agentao serve: {exc}", file=sys.stderr, flush=True)
        return EXIT_BAD_EVENT_LOOP
    logging.basicConfig(level=log_level.upper(), format="%(levelname)s %(name)s: %(message)s")
    redact_root_handlers()
    try:
        sock = bind(config.host, config.port)
    except BindError as exc:
        print(f"agentao serve: {exc}", file=sys.stderr, flush=True)
        return EXIT_BIND_FAILED
    port = sock.getsockname()[1]
    try:
        token = None if config.keys else ensure_token(ensure_state_dir())
    except (LocalTokenError, OSError) as exc:  # a token file we cannot trust: say what to fix
        sock.close()
        print(f"agentao serve: {exc}", file=sys.stderr, flush=True)
        return EXIT_LOCAL_TOKEN
    try:
        app = create_app(replace(config, port=port), local_token=token)
    except StoreUnavailable as exc:  # the message names the host, never the password
        sock.close()
        print(f"agentao serve: {exc}", file=sys.stderr, flush=True)
        return EXIT_STORE_UNAVAILABLE
    settle_heap(config.limits)
    names = ", ".join(a.name for a in config.agents)
    server = _AnnouncingServer(
        uvicorn.Config(
            app,
            host=config.host,
            port=port,
            log_level=log_level,
            log_config=uvicorn_log_config(),
            access_log=False,
            http=GatewayHttpProtocol,
            loop=event_loop,
        ),
        f"agentao serve: listening on {url_of(config.host, port)} (agents: {names})"
        + _login_banner(app, url_of(config.host, port)),
    )
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it shut down on, as uvicorn.run
        pass
    finally:
        sock.close()
    return 0 if server.started else 1


def _login_banner(app: Any, base_url: str) -> str:
    """For a keyless gateway: where its token is, and a one-time login link for the web UI.
    (Printed for the person who started it, never logged: log lines lose query strings.)"""
    login = app.state.gateway.auth.login
    if login is None:
        return ""
    seconds = int(login.limits.login_link_seconds)
    return (
        f"\nagentao serve: local token in {token_path(ensure_state_dir())} (send it as "
        f"'Authorization: Bearer <token>'); web UI: {login_url(base_url, login.new_code())} "
        f"(works once, within {seconds} s)"
    )


__all__ = [
    "EXIT_BAD_EVENT_LOOP",
    "EXIT_BIND_FAILED",
    "EXIT_LOCAL_TOKEN",
    "EXIT_STORE_UNAVAILABLE",
    "LISTEN_BACKLOG",
    "BindError",
    "GatewayServer",
    "bind",
    "serve",
    "settle_heap",
    "url_of",
]
