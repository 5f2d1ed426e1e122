"""A client's system prompt (ACP unstable `systemPrompt` on `session/new`, `load`, `resume`
and v2's `fork`), as our agent applies it.

We advertise `sessionCapabilities.systemPrompt` with both modes: `append` adds the
client's text after our own system prompt (under a heading, so the model tells the two
apart); `override` replaces our built-in instructions with it (the workspace facts the
built-in prompt carries go with them: the client takes that responsibility, as the
schema says). The prompt is kept in the session's `meta`, so it is stored with the
session and a later `session/load` or `resume` without one keeps it; one that names a
prompt replaces it from then on. A bad one (an unknown mode, an empty or non-text
content) is -32602 before anything is created or loaded, as the schema requires.
"""

from __future__ import annotations

from typing import Any

from agentao.agent.session import AgentSession
from agentao.protocol.errors import InvalidParams

META_KEY = "client_system_prompt"  # {"mode": "append" | "override", "text": str}
MODES = ("append", "override")
APPEND_HEADING = "# Instructions from the client"


def read_client_prompt(raw: Any) -> dict[str, str] | None:
    """The request's `systemPrompt`, checked: {"mode", "text"}, or None when absent."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise _bad("systemPrompt must be an object")
    mode = raw.get("mode")
    if mode not in MODES:
        raise _bad(f"systemPrompt.mode {mode!r} is not supported (supported: append, override)")
    content = raw.get("content")
    if not isinstance(content, list) or not content:
        raise _bad("systemPrompt.content must be a non-empty list of text blocks")
    texts = []
    for i, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") != "text":
            raise _bad(f"systemPrompt.content[{i}] is not a text block (only text is supported)")
        if not isinstance(block.get("text"), str):
            raise _bad(f"systemPrompt.content[{i}].text must be a string")
        texts.append(block["text"])
    return {"mode": mode, "text": "\n\n".join(texts)}


def keep_client_prompt(agent: AgentSession, prompt: dict[str, str] | None) -> None:
    """Store the session's client prompt (None: keep the one it has, if any)."""
    if prompt is not None:
        agent.meta[META_KEY] = prompt


def with_client_prompt(agent: AgentSession, built: str) -> str:
    """Our system prompt `built` for `agent`, with its client's prompt applied."""
    prompt = agent.meta.get(META_KEY)
    if not isinstance(prompt, dict) or not isinstance(prompt.get("text"), str):
        return built
    if prompt.get("mode") == "override":
        return prompt["text"].rstrip() + "\n"
    return f"{built.rstrip()}\n\n{APPEND_HEADING}\n{prompt['text'].rstrip()}\n"


def _bad(message: str) -> InvalidParams:
    return InvalidParams(f"Invalid params: {message}", {"field": "systemPrompt"})


__all__ = [
    "APPEND_HEADING",
    "META_KEY",
    "MODES",
    "keep_client_prompt",
    "read_client_prompt",
    "with_client_prompt",
]
