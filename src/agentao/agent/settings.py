"""Named limits for the agent's tools, shell, web fetch and MCP, in one place.

Every cap that can cut output says so in the output (`cap_text` writes a visible
marker naming the limit); nothing is ever cut silently. The defaults are chosen
so one tool result stays well inside a model's context window.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class FileLimits:
    """Caps for read_file, list_directory, glob and search_file_content."""

    read_default_lines: int = 2000  # read_file without `limit`
    read_max_line_chars: int = 2000  # longer lines are cut with a marker
    read_max_chars: int = 256 * 1024  # total text one read_file returns
    list_max_entries: int = 1000
    glob_max_results: int = 500
    grep_max_matches: int = 500
    grep_max_file_bytes: int = 4 * 1024 * 1024  # bigger files are skipped (and counted)
    grep_max_files: int = 10_000  # files one search reads; it stops there and says so
    grep_max_total_bytes: int = 64 * 1024 * 1024  # bytes one search reads, all files together
    walk_max_entries: int = 200_000  # names one glob or search enumerates before it stops
    ignored_dirs: tuple[str, ...] = (".git", "node_modules", "__pycache__", ".venv")


@dataclass(frozen=True, slots=True)
class ShellLimits:
    """Caps for run_shell_command and LocalEnv.run_command."""

    default_timeout: float = 120.0  # seconds, when the model gives none
    max_timeout: float = 600.0  # the model cannot ask for more
    output_limit: int = 64 * 1024  # bytes kept (head and tail), the middle is marked
    kill_grace: float = 1.0  # SIGTERM → SIGKILL delay after a timeout
    cancel_grace: float = 0.05  # same after a cancellation (cancel must answer in 100 ms)
    drain_after_exit: float = 0.2  # read leftovers this long after the shell exits
    reap_timeout: float = 2.0  # wait at most this long for the group to be gone
    become_subreaper: bool = True  # reap orphaned grandchildren (Linux; see local_env)
    # bytes of one command's output streamed live to a terminal's viewers (ACP v2's
    # terminal_output_chunk); past it the chunks stop, and the end sends the kept output
    terminal_stream_limit: int = 1024 * 1024


@dataclass(frozen=True, slots=True)
class WebLimits:
    """Caps and policy for web_fetch."""

    max_bytes: int = 2 * 1024 * 1024  # body bytes read; the rest is not downloaded
    timeout: float = 30.0  # seconds for the whole fetch, redirects included
    max_text_chars: int = 100_000  # readable text handed to the model
    max_redirects: int = 5
    allow_private_addresses: bool = False  # loopback/private/link-local refused unless True
    user_agent: str = "agentao-web-fetch/1.0"


@dataclass(frozen=True, slots=True)
class McpLimits:
    """Time limits for MCP servers and the size of one MCP tool result."""

    startup_timeout: float = 30.0  # connect + initialize + list tools
    call_timeout: float = 300.0  # one tools/call
    close_timeout: float = 10.0  # aclose waits this long for all servers
    max_result_chars: int = 100_000


def cap_text(text: str, limit: int, setting: str) -> tuple[str, bool]:
    """`text` cut to `limit` characters with a marker naming `setting`; and whether it was cut."""
    if len(text) <= limit:
        return text, False
    omitted = len(text) - limit
    marker = f"\n[... {omitted} more characters not shown: limit {setting}={limit} ...]"
    return text[:limit] + marker, True


def agentao_home() -> Path:
    """The user's agentao state directory: $AGENTAO_HOME, else $XDG_STATE_HOME/agentao,
    else ~/.local/state/agentao. Never the project directory."""
    if home := os.environ.get("AGENTAO_HOME"):
        return Path(home).expanduser()
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state).expanduser() / "agentao"


__all__ = [
    "FileLimits",
    "McpLimits",
    "ShellLimits",
    "WebLimits",
    "agentao_home",
    "cap_text",
]
