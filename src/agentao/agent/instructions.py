"""Project instructions: AGENTS.md (and AGENTAO.md) files, for the system prompt.

Where they are read from, and nowhere else:

    the user's own file     <config dir>/AGENTS.md (or AGENTAO.md), see catalog.config_dir
    the repository          the workspace's directory and each parent up to the repository
                            root (the nearest directory holding `.git`); without a
                            repository, the workspace's directory alone

so a hostile checkout's parent directories (a downloads folder, /tmp) cannot add
instructions beyond the repository root. The user's file comes first, then the
repository's from the root down, so the most specific file is read last. Each file is
opened without following a symlink (a repository's content is untrusted: a link to
~/.ssh/id_rsa must not go to the model provider), must be a regular file, and is cut at
`InstructionSettings.max_file_chars`; all together at `max_total_chars`.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentao.agent.catalog import config_dir
from agentao.agent.context import positive_int

__all__ = [
    "INSTRUCTION_FILES",
    "InstructionFile",
    "InstructionSettings",
    "find_instructions",
    "repository_root",
    "search_dirs",
]

log = logging.getLogger(__name__)

INSTRUCTION_FILES = ("AGENTS.md", "AGENTAO.md")


@dataclass(frozen=True, slots=True)
class InstructionSettings:
    max_file_chars: int = 16_000  # AGENTAO_INSTRUCTIONS_MAX_CHARS: one file's cap
    max_total_chars: int = 32_000  # all files together

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> InstructionSettings:
        raw = env.get("AGENTAO_INSTRUCTIONS_MAX_CHARS", "").strip()
        if not raw:
            return cls()
        per_file = positive_int(raw, "AGENTAO_INSTRUCTIONS_MAX_CHARS")
        return cls(per_file, max(per_file, cls().max_total_chars))


@dataclass(frozen=True, slots=True)
class InstructionFile:
    path: Path
    text: str
    truncated: bool = False


def repository_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` that holds `.git`, if any."""
    for directory in (start, *start.parents):
        if os.path.lexists(directory / ".git"):
            return directory
    return None


def search_dirs(cwd: Path) -> list[Path]:
    """The directories whose instruction files count, root first."""
    root = repository_root(cwd)
    if root is None:
        return [cwd]
    chain = [cwd, *cwd.parents]
    return list(reversed(chain[: chain.index(root) + 1]))


def find_instructions(
    cwd: Path,
    settings: InstructionSettings | None = None,
    env: Mapping[str, str] = os.environ,
) -> list[InstructionFile]:
    """The instruction files for a session in `cwd`, in the order they are to be read."""
    settings = settings or InstructionSettings()
    dirs = [Path(config_dir(env)), *search_dirs(cwd.resolve())]
    found: list[InstructionFile] = []
    left = settings.max_total_chars
    for directory in dirs:
        for name in INSTRUCTION_FILES:
            if left <= 0:
                break
            item = _read(directory / name, min(settings.max_file_chars, left))
            if item is not None:
                found.append(item)
                left -= len(item.text)
                log.info(
                    "instructions: %s (%d characters%s)",
                    item.path,
                    len(item.text),
                    ", cut" if item.truncated else "",
                )
    return found


def _read(path: Path, limit: int) -> InstructionFile | None:
    """The file's text (at most `limit` characters), or None: absent, not a regular file,
    a symlink, unreadable or not UTF-8."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit * 4 + 4)
    except OSError:
        return None
    finally:
        os.close(fd)
    text = data.decode("utf-8", "replace").strip()
    if not text:
        return None
    truncated = len(text) > limit
    return InstructionFile(path, text[:limit], truncated)
