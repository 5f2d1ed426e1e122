"""`agentao --acp`: serve ACP on stdio until the client closes stdin.

Stdout carries protocol messages only (`open_stdio` moves everything else to
stderr). Logs go to stderr and to `agent.log` in the state directory, never
to the session's project. The exit code is 0 after a clean EOF.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from agentao.protocol.endpoint import Endpoint
from agentao.protocol.stdio import open_stdio
from agentao.server.agent import AcpAgent
from agentao.server.persistence import SessionArchive
from agentao.server.settings import ServerSettings
from agentao.store.paths import LOG_NAME, database_path, ensure_state_dir
from agentao.store.sessions import open_session_store

log = logging.getLogger("agentao.server")


def serve_stdio(resume: str | None = None) -> int:
    """Run the ACP agent on this process's stdin/stdout; `resume` as `--resume [ID]`."""
    settings = ServerSettings.from_env()
    _setup_logging(settings.log_level)
    try:
        asyncio.run(serve(settings, resume))
    except KeyboardInterrupt:
        return 130
    return 0


async def serve(settings: ServerSettings, resume: str | None) -> None:
    store = open_session_store(database_path(), settings.store)
    agent = AcpAgent(SessionArchive(store), settings, resume=resume)
    endpoint = Endpoint(agent, role="agent")
    agent.endpoint = endpoint
    try:
        reader, writer = await open_stdio()
        log.info("agentao ACP agent ready (state in %s)", database_path().parent)
        await endpoint.run(reader, writer)  # type: ignore[arg-type]
    finally:
        await agent.shutdown()
        store.db.close()


def _setup_logging(level: str) -> None:
    root = logging.getLogger("agentao")
    root.setLevel(getattr(logging, level, logging.INFO))
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    to_stderr = logging.StreamHandler(sys.stderr)
    to_stderr.setFormatter(fmt)
    root.addHandler(to_stderr)
    try:
        to_file = logging.FileHandler(ensure_state_dir() / LOG_NAME, encoding="utf-8")
    except OSError as exc:
        root.warning("cannot write the log file: %s", exc)
        return
    to_file.setFormatter(fmt)
    root.addHandler(to_file)


__all__ = ["serve", "serve_stdio"]
