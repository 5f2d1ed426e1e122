"""Where agentao keeps its state: one directory per user, never the session's cwd.

`AGENTAO_HOME` wins; else `$XDG_STATE_HOME/agentao`; else `~/.local/state/agentao`.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME_VARIABLE = "AGENTAO_HOME"
DATABASE_NAME = "agentao.sqlite3"
LOG_NAME = "agent.log"


def state_dir(environ: dict[str, str] | None = None) -> Path:
    """The state directory (not created here)."""
    env = os.environ if environ is None else environ
    if env.get(HOME_VARIABLE):
        return Path(env[HOME_VARIABLE]).expanduser()
    xdg = env.get("XDG_STATE_HOME")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "agentao"
    return Path.home() / ".local" / "state" / "agentao"


def ensure_state_dir(environ: dict[str, str] | None = None) -> Path:
    """The state directory, created (mode 0700) if missing."""
    path = state_dir(environ)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


def database_path(environ: dict[str, str] | None = None) -> Path:
    return ensure_state_dir(environ) / DATABASE_NAME


__all__ = [
    "DATABASE_NAME",
    "HOME_VARIABLE",
    "LOG_NAME",
    "database_path",
    "ensure_state_dir",
    "state_dir",
]
