"""`@path` in a prompt: the file goes along, as an embedded resource or a link.

An agent that declares `promptCapabilities.embeddedContext` gets the file's text in an
embedded `resource` block; any other agent a `resource_link` it may read itself. Only files
inside the workspace go (resolved: a symlink or `..` that leads out is refused), only text,
and only up to `MENTION_MAX_BYTES` embedded (a larger one goes as a link): what the person
typed must not send `~/.ssh/id_rsa` because a mention looked like a path.
"""

from __future__ import annotations

import mimetypes
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MENTION_MAX_BYTES = 256 * 1024  # a larger file is sent as a resource_link, not embedded
MENTION = re.compile(r"(?<!\S)@(\S+)")


@dataclass(frozen=True, slots=True)
class Mentions:
    blocks: list[dict[str, Any]]  # the prompt's text block first, then one block per file
    refused: list[str]  # mentions that name no file inside the workspace (with why)


def prompt_blocks(text: str, cwd: str, *, embed: bool) -> Mentions:
    """The prompt as content blocks: its text, then each mentioned file once."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}]
    refused: list[str] = []
    seen: set[Path] = set()
    root = Path(cwd).resolve()
    for name in MENTION.findall(text):
        name = name.rstrip(",.;:!?)")
        path = (root / name).resolve()
        if not path.is_relative_to(root):
            refused.append(f"@{name}: outside the workspace")
        elif not path.is_file():
            refused.append(f"@{name}: no such file")
        elif path not in seen:
            seen.add(path)
            blocks.append(_block(path, name, embed))
    return Mentions(blocks, refused)


def _block(path: Path, name: str, embed: bool) -> dict[str, Any]:
    uri = path.as_uri()
    mime = mimetypes.guess_type(path.name)[0] or "text/plain"
    if embed and path.stat().st_size <= MENTION_MAX_BYTES:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            pass  # not text: the agent gets a link
        else:
            resource = {"uri": uri, "mimeType": mime, "text": text}
            return {"type": "resource", "resource": resource}
    return {"type": "resource_link", "uri": uri, "name": name, "mimeType": mime}


__all__ = ["MENTION_MAX_BYTES", "Mentions", "prompt_blocks"]
