"""The agent's event loop: the endpoint over stdio, the store, and an orderly shutdown."""

from __future__ import annotations

import logging
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
from agentao.store.paths import LOG_NAME, database_path, ensure_state_dir
from agentao.store.sessions import open_session_store

log = logging.getLogger("agentao.server")


async def serve(
    conn: Connection, leftover: bytes, client_capabilities: Any, resume: str | None
) -> None:
    """Serve until EOF on a connection whose handshake may already be done."""
    settings = ServerSettings.from_env()
    setup_logging(settings.log_level, ensure_state_dir() / LOG_NAME)
    store = open_session_store(database_path(), settings.store)
    agent = AcpAgent(SessionArchive(store), settings, resume=resume)
    if client_capabilities is not None:
        agent.accept_client(client_capabilities)
    endpoint = Endpoint(agent, role="agent", connection=conn)
    coalescing: CoalescingWriter | None = None
    agent.endpoint = endpoint
    try:
        reader, writer = await open_stdio()
        log.info("agentao ACP agent ready (state in %s)", database_path().parent)
        coalescing = CoalescingWriter(writer)
        await endpoint.run(PrefixedReader(leftover, reader, agent.cancel_all), coalescing)
    finally:
        await agent.shutdown()
        if coalescing is not None:
            coalescing.flush()
        store.db.close()


__all__ = ["serve"]
