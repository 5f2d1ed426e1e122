"""The system prompt: one text file (`prompts/system.md`), filled in per session.

It tells the model who and where it is (date, platform, working directory, workspace
roots, the repository's branch and changed files), how to use each tool well, and
then the project's instructions (`instructions.py`), each under its file's path. No
secrets and nothing of ACP go into it.
"""

from __future__ import annotations

import functools
import platform
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from agentao.agent.instructions import InstructionFile
from agentao.agent.repository import RepoState, describe

__all__ = ["PROMPT_FILE", "SystemFacts", "build_system_prompt"]

PROMPT_FILE = Path(__file__).parent / "prompts" / "system.md"


@dataclass(frozen=True, slots=True)
class SystemFacts:
    cwd: Path
    roots: tuple[Path, ...]
    repository: RepoState
    instructions: Sequence[InstructionFile] = ()
    today: date | None = None
    platform: str = ""


def build_system_prompt(facts: SystemFacts) -> str:
    values = {
        "date": (facts.today or date.today()).isoformat(),
        "platform": facts.platform or f"{platform.system()} {platform.machine()}".strip(),
        "cwd": str(facts.cwd),
        "roots": ", ".join(str(p) for p in facts.roots) or str(facts.cwd),
        "repository": describe(facts.repository),
        "instructions": _instructions(facts.instructions),
    }
    text = _template()
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text.rstrip() + "\n"


@functools.cache
def _template() -> str:
    """The prompt file, read once per process: it is part of the installed package, and
    every session's prompt is built from it."""
    return PROMPT_FILE.read_text(encoding="utf-8")


def _instructions(files: Sequence[InstructionFile]) -> str:
    if not files:
        return ""
    parts = [
        "\n# Project instructions\n"
        "The user and the project give these instructions; follow them (a later file is "
        "more specific and wins over an earlier one)."
    ]
    for item in files:
        cut = (
            "\n[... cut: the file is longer than the instructions limit ...]"
            if item.truncated
            else ""
        )
        parts.append(f"\n## {item.path}\n\n{item.text}{cut}")
    return "\n".join(parts)
