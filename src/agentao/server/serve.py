"""The agent's event loop: the endpoint over stdio, the store, and an orderly shutdown.

Once it runs (`initialize` is answered), the agent warms up in the background: the
one-off sandbox probe and the imports every session needs (`AcpAgent.warm`), so the
first `session/new` does not pay for them."""

from __future__ import annotations

import logging
import os
from typing import Any

from agentao.protocol.connection import Connection
from agentao.protocol.endpoint import Endpoint
from agentao.protocol.stdio import open_stdio
from agentao.server.agent import AcpAgent
from agentao.server.coalesce import CoalescingWriter
from agentao.server.handshake import PrefixedReader
from agentao.server.logs import setup_logging
from agentao.server.persistence import SessionArchive
from agentao.server.settings import ServerSettings
from agentao.store.paths import LOG_NAME, ensure_state_dir
from agentao.store.session_target import open_agent_sessions

log = logging.getLogger("agentao.server")


async def serve(
    conn: Connection, leftover: bytes, client_capabilities: Any, resume: str | None
) -> None:
    """Serve until EOF on a connection whose handshake may already be done."""
    settings = ServerSettings.from_env()
    home = ensure_state_dir()
    setup_logging(settings.log_level, home / LOG_NAME)
    store = open_agent_sessions(os.environ, settings.store)
    agent = AcpAgent(SessionArchive(store), settings, resume=resume)
    if client_capabilities is not None:
        agent.accept_client(client_capabilities)
    endpoint = Endpoint(agent, role="agent", connection=conn)
    coalescing: CoalescingWriter | None = None
    agent.endpoint = endpoint
    try:
        reader, writer = await open_stdio()
        log.info("agentao ACP agent ready (state in %s)", home)
        coalescing = CoalescingWriter(writer)
        agent.warm()
        await endpoint.run(PrefixedReader(leftover, reader, agent.cancel_all), coalescing)
    finally:
        await agent.shutdown()
        if coalescing is not None:
            coalescing.flush()
        await store.close()


__all__ = ["serve"]
