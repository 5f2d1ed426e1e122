"""Where the agent's log goes: stderr and a rotating `agent.log` in the state directory.

Never stdout (the wire) and never the session's project. Every record, its traceback
included, passes `agentao.credentials.RedactSecrets` first. Set up once the handshake is
answered: `logging` is not needed to answer `initialize`.
"""

from __future__ import annotations

import sys
from typing import Any

LOG_FILE_BYTES = 10 * 1024 * 1024  # agent.log rotates at this size
LOG_FILE_BACKUPS = 3  # agent.log.1 … .3 are kept


def setup_logging(level: str, log_file: Any | None) -> None:
    """Log to stderr and, when it can be opened, to `log_file` (rotated)."""
    import logging  # here, not above: it is not needed to answer `initialize`
    from logging.handlers import RotatingFileHandler

    from agentao.credentials import RedactSecrets

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
        handler.addFilter(RedactSecrets())  # a store URL's password, a key in a traceback
        root.addHandler(handler)


__all__ = ["LOG_FILE_BACKUPS", "LOG_FILE_BYTES", "setup_logging"]
