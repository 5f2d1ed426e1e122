"""`agentao --acp`: serve ACP on stdio until the client closes stdin.

`initialize` is answered first, synchronously (`handshake.py`), before the
event loop and the runtime are imported; then the endpoint serves the rest.
Stdout carries protocol messages only; logs go to stderr and to `agent.log`
in the state directory, never to the session's project. Exit code 0 at EOF.
"""

from __future__ import annotations

import sys
from typing import Any

from agentao.protocol.connection import Connection
from agentao.server.capabilities import initialize_response
from agentao.server.handshake import handshake


def serve_stdio(resume: str | None = None) -> int:
    """Run the ACP agent on this process's stdin/stdout; `resume` as `--resume [ID]`."""
    conn = Connection("agent")
    client: dict[str, Any] = {}

    def answer(params: Any) -> dict[str, Any]:
        client["capabilities"] = params.client_capabilities
        return initialize_response()

    try:
        leftover = handshake(conn, answer)
        import asyncio

        from agentao.server.serve import serve

        asyncio.run(serve(conn, leftover, client.get("capabilities"), resume))
    except KeyboardInterrupt:
        return 130
    return 0


LOG_FILE_BYTES = 10 * 1024 * 1024  # agent.log rotates at this size
LOG_FILE_BACKUPS = 3  # agent.log.1 … .3 are kept


def setup_logging(level: str, log_file: Any | None) -> None:
    """Log to stderr and, when it can be opened, to `log_file` (rotated)."""
    import logging  # here, not above: it is not needed to answer `initialize`
    from logging.handlers import RotatingFileHandler

    root = logging.getLogger("agentao")
    root.setLevel(getattr(logging, level, logging.INFO))
    fmt = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file is not None:
        try:
            handlers.append(
                RotatingFileHandler(
                    log_file,
                    maxBytes=LOG_FILE_BYTES,
                    backupCount=LOG_FILE_BACKUPS,
                    encoding="utf-8",
                )
            )
        except OSError as exc:
            sys.stderr.write(f"agentao: cannot write the log file: {exc}\n")
    for handler in handlers:
        handler.setFormatter(fmt)
        root.addHandler(handler)


__all__ = ["serve_stdio", "setup_logging"]
