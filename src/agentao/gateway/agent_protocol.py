"""What the gateway's pool does differently when an agent process speaks ACP v2.

Theory of operation. The pool's processes offer v2 and fall back to v1 (`[agents.NAME]
protocol`, config.py); the client library settles the version per process and folds a v2
agent's updates, permission questions and idle `state_update` into the same typed events
as v1's (client/v2.py), so a turn is driven the same way over both. What is left for the
gateway is here, in one place, so that the rest of it reads one shape:

* the log: every face reads the conversation's log in v1's shape (the bridge derives v2
  from it, gateway/remote/bridge.py). A v2 agent's update is logged, mapped to OpenAI
  chunks and offered as `x_acp` as the v1 update the client library read it as
  (`logged_update`); what a v1 agent would not have sent (a `state_update`: the log has
  the turn's own frames; the echo of the prompt) is not logged. What a tool call says
  that v1 cannot (`capabilities.cancel`, a `cancelled` end) is kept under its `_meta`
  (meta.V2_TOOL_CALL), for the bridge to give back to v2 clients. The agent's own
  terminals (`terminal_update`, `terminal_output_chunk`) are logged as their tool call's
  `tool_call_update`, the output so far its text, the v2 updates kept under `_meta`
  (meta.V2_TERMINAL) for the bridge (agent_terminals.py).
* reopening a stored session after a restart: v1 `session/load`, v2 `session/resume`
  with `replayFrom: start` (v2 has no load); either way the history is replayed before the
  answer, into the session's view (`reopen`, `can_reopen`).
* modes: v1's `modes`, v2's config option of category `mode` (`current_mode`, `with_mode`),
  and config options named by `configId` in v2 (`model_choices`).
* `initialize`: what the pool keeps of it for remote ACP clients is v1's shape, the
  bridge's input (`initialize_v1`).

Confinement: a v2 agent calls none of the client's `fs/*` or `terminal/*`, so the pool's
confined file service never bounds it; only its process's sandbox does (confine.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, get_args

import msgspec

from agentao.client import Client, Session, Update
from agentao.client.children import SUBAGENT_UPDATE
from agentao.gateway.agent_terminals import TERMINAL_KINDS, own_terminals, terminal_logged
from agentao.protocol import meta, schema
from agentao.protocol.decode import raw_of, to_builtins
from agentao.protocol.v2.to_v1 import MODE_CATEGORY

V2 = 2
# `protocol = "auto"`: the versions a process is offered, in order. v1 first, though every
# face works over either: the client library relays at 0.7-0.85x over v2 (docs/gateway.md,
# "Why `auto` prefers v1").
AUTO = (1, V2)
CANCELLED = "cancelled"  # a v2 tool call's end that v1 has no status for (v1 reads `failed`)
USER_ECHO = "user_message_chunk"  # a v2 agent echoes each prompt; a v1 one does not
_TOOL_KINDS = ("tool_call", "tool_call_update")
# The v1 update structs: what a v2 update the client library translated decodes to.
_V1_UPDATES = get_args(schema.SessionUpdate)


def speaks_v2(session: Session) -> bool:
    return session.channel.version == V2


def logged_update(session: Session, update: Update) -> Update | None:
    """`update` as the gateway logs and maps it: its `raw` in v1's wire shape, whatever
    the agent speaks; None for what a v1 agent would not have sent (a v2 `state_update`:
    the turn's own frames say it; the echo of a prompt: the task's start says it)."""
    if not speaks_v2(session):
        return update
    if update.kind in TERMINAL_KINDS and update.value is not None:
        return terminal_logged(session, update)
    # A child's news comes as v2's type (v1's unstable one has its fields): kept.
    child_news = update.kind == SUBAGENT_UPDATE and update.value is not None
    if not child_news and (not isinstance(update.value, _V1_UPDATES) or update.kind == USER_ECHO):
        return None
    wire = to_builtins(update.value)
    wire.pop("messageId", None)  # v2's message ids: the bridge derives its own from the log
    raw = update.raw if update.kind in _TOOL_KINDS else None  # read only where it counts
    if (kept := _v2_tool_call_fields(raw)) is not None:
        wire["_meta"] = {**(wire.get("_meta") or {}), meta.V2_TOOL_CALL: kept}
    if isinstance(extra := wire.get("_meta"), dict) and meta.V2_TERMINAL in extra:
        wire["_meta"] = {k: v for k, v in extra.items() if k != meta.V2_TERMINAL}  # ours only
    if raw is not None and (terminals := own_terminals(session, raw)):
        wire["_meta"] = {**(wire.get("_meta") or {}), meta.V2_TERMINAL: terminals}
    return msgspec.structs.replace(update, wire=raw_of(wire))


def _v2_tool_call_fields(raw: Any) -> dict[str, Any] | None:
    """What a v2 tool call update says that v1 cannot (meta.V2_TOOL_CALL): whether
    `tool_call/cancel` may stop it now, and a `cancelled` end; None when it says neither."""
    if not isinstance(raw, dict) or raw.get("sessionUpdate") != "tool_call_update":
        return None
    kept = {k: raw[k] for k in ("capabilities",) if k in raw}
    if raw.get("status") == CANCELLED:
        kept["status"] = CANCELLED
    return kept or None


def can_reopen(client: Client) -> bool:
    """Whether the agent reopens a stored session: v1 `loadSession`, v2 `session/resume`."""
    if client.protocol_version == V2:
        return client.supports("resume")
    return client.supports("load")


async def reopen(
    client: Client,
    session_id: str,
    cwd: str,
    additional_dirs: Sequence[str],
    mcp_servers: Sequence[Any],
    system_prompt: dict[str, Any] | None = None,
) -> Session:
    """Reopen a stored session with its history replayed first (into `session.drain()`)."""
    if client.protocol_version == V2:
        return await client.resume_session(
            session_id,
            cwd,
            additional_dirs=additional_dirs,
            mcp_servers=mcp_servers,
            replay=True,
            system_prompt=system_prompt,
        )
    return await client.load_session(
        session_id,
        cwd,
        additional_dirs=additional_dirs,
        mcp_servers=mcp_servers,
        system_prompt=system_prompt,
    )


def mode_option(response: Any) -> Any:
    """A v2 answer's config option of category `mode`, if any."""
    for option in getattr(response, "config_options", None) or ():
        if getattr(option, "category", None) == MODE_CATEGORY:
            return option
    return None


def current_mode(response: Any) -> str | None:
    """The mode a session/new, load or resume answer says it is in: v1's
    `modes.currentModeId`, v2's mode option's `currentValue`."""
    modes = getattr(response, "modes", None)
    if modes is not None:
        return getattr(modes, "current_mode_id", None)
    value = getattr(mode_option(response), "current_value", None)
    return value if isinstance(value, str) else None


def with_mode(response: Any, mode: str) -> Any:
    """A session/new or reopen answer that says it is in `mode` (what clients are shown)."""
    if not isinstance(response, msgspec.Struct):
        return response
    modes = getattr(response, "modes", None)
    if isinstance(modes, msgspec.Struct):
        return msgspec.structs.replace(
            response, modes=msgspec.structs.replace(modes, current_mode_id=mode)
        )
    option = mode_option(response)
    if not isinstance(option, msgspec.Struct):
        return response
    options = [
        msgspec.structs.replace(o, current_value=mode) if o is option else o
        for o in response.config_options  # type: ignore[attr-defined]
    ]
    return msgspec.structs.replace(response, config_options=options)


def option_id(option: Any) -> str | None:
    """A config option's id: v1 `id`, v2 `configId`."""
    return getattr(option, "config_id", None) or getattr(option, "id", None)


def model_choices(response: Any) -> tuple[str | None, tuple[str, ...]]:
    """(option id, values) of the `model` select option in a session's `configOptions`."""
    for option in getattr(response, "config_options", None) or ():
        if getattr(option, "category", None) != "model" and option_id(option) != "model":
            continue
        values: list[str] = []
        for item in getattr(option, "options", None) or ():
            group = getattr(item, "options", None)
            for choice in group if isinstance(group, list) else (item,):
                value = getattr(choice, "value", None)
                if isinstance(value, str):
                    values.append(value)
        return option_id(option), tuple(values)
    return None, ()


def initialize_v1(client: Client) -> dict[str, Any]:
    """The agent's `initialize` answer in v1's shape, `authMethods` empty (the gateway
    authenticated its processes; a remote client authenticates to the gateway)."""
    init = to_builtins(client.init)
    if client.protocol_version != V2:
        return {**init, "authMethods": []}
    session = (init.get("capabilities") or {}).get("session") or {}
    prompt = session.get("prompt") or {}
    mcp = session.get("mcp") or {}
    return {
        "protocolVersion": 1,
        "agentInfo": init.get("info"),
        "agentCapabilities": {
            "loadSession": can_reopen(client),
            "promptCapabilities": {k: k in prompt for k in ("image", "audio", "embeddedContext")},
            "mcpCapabilities": {"http": "http" in mcp, "sse": False},
        },
        "authMethods": [],
    }


def takes_images(client: Client) -> bool:
    """Whether the agent's prompts take image blocks (v1 `image: true`, v2 a marker)."""
    init = to_builtins(client.init)
    if client.protocol_version == V2:
        prompt = ((init.get("capabilities") or {}).get("session") or {}).get("prompt") or {}
        return "image" in prompt
    caps = init.get("agentCapabilities") or {}
    return bool((caps.get("promptCapabilities") or {}).get("image"))


def takes_system_prompt(client: Client) -> bool:
    """Whether the agent takes a client's `systemPrompt` (unstable; `append` at least)."""
    init = to_builtins(client.init)
    if client.protocol_version == V2:
        session = (init.get("capabilities") or {}).get("session") or {}
    else:
        session = (init.get("agentCapabilities") or {}).get("sessionCapabilities") or {}
    return isinstance(session.get("systemPrompt"), dict)


__all__ = [
    "AUTO",
    "V2",
    "can_reopen",
    "current_mode",
    "initialize_v1",
    "logged_update",
    "mode_option",
    "model_choices",
    "option_id",
    "reopen",
    "speaks_v2",
    "takes_images",
    "takes_system_prompt",
    "with_mode",
]
