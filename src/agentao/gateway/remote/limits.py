"""What a key may ask of an agent over remote ACP, beyond what the guard and `owns` decide.

- Where a session may be: its `cwd` and every additional directory must resolve inside
  the agent's roots (its `cwd` and sandbox `write` paths: all its confined process sees),
  whatever the key; the agent is given the resolved paths, so it opens what was checked.
- What it may name: a stdio MCP server (a command run on the gateway's host) only with
  the ceiling `all`.
- What a method passed on to the agent may change: below `all`, only the modes and
  config values the agent's config names for the key's ceiling (ceilings.py), and no
  other method (an extension, or `session/fork` naming another cwd or a stdio server,
  would reach past the checks `session/new` made).
- Whom the agent's permission questions go to: the remote client, within the ceiling.
- Its instructions: a `systemPrompt` (ACP unstable) in `session/new` is kept with the
  conversation's session params and so reaches the agent in the `session/new` that
  makes the session, and again in every `session/load` that reopens it (pool.py). The
  agent checks its mode and content, as the schema says it must; the gateway refuses
  (-32602, field `systemPrompt`) one that is not an object, and any for an agent that
  does not advertise `sessionCapabilities.systemPrompt` (it would be dropped unread).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentao.gateway.auth import Principal
from agentao.gateway.config import AgentSpec, Policy, policy_rank
from agentao.gateway.pool import AgentPool, SessionParams
from agentao.gateway.roots import PathRefused, resolve_within
from agentao.protocol.errors import InvalidParams, InvalidRequest

SET_MODEL_METHOD = "_agentao.cn/set_model"  # our agent's model switch: the model option
MODE_CHANGE = "mode"  # a change of the session's mode, not of a config option


def session_params(principal: Principal, pool: AgentPool, params: dict[str, Any]) -> SessionParams:
    """Where the client wants its session, within what its key may reach here, and its
    instructions."""
    spec = pool.spec
    cwd = params.get("cwd")
    dirs = params.get("additionalDirectories") or []
    servers = params.get("mcpServers") or []
    if not isinstance(cwd, str) or not Path(cwd).is_absolute():
        raise InvalidParams("Invalid params: cwd must be an absolute path", {"field": "cwd"})
    if not isinstance(dirs, list) or not isinstance(servers, list):
        raise InvalidParams("Invalid params: additionalDirectories and mcpServers are lists")
    cwd = _within(spec, "cwd", cwd)
    dirs = [_within(spec, f"additionalDirectories[{i}]", d) for i, d in enumerate(dirs)]
    if principal.ceiling != "all" and any(isinstance(s, dict) and "command" in s for s in servers):
        raise InvalidParams(
            "Invalid params: a stdio MCP server runs a command on the gateway's host; only "
            "a key whose ceiling is 'all' may name one",
            {"field": "mcpServers"},
        )
    instructions = system_prompt(pool, params.get("systemPrompt"))
    return SessionParams(cwd, tuple(map(str, dirs)), tuple(servers), instructions)


def system_prompt(pool: AgentPool, value: Any) -> dict[str, Any] | None:
    """The client's `systemPrompt` for an agent that takes one (None: it sent none)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidParams(
            "Invalid params: systemPrompt must be an object", {"field": "systemPrompt"}
        )
    if not pool.info.system_prompt:
        raise InvalidParams(
            f"Invalid params: the agent {pool.spec.name!r} does not take a systemPrompt "
            "(it does not advertise sessionCapabilities.systemPrompt)",
            {"field": "systemPrompt"},
        )
    return value


def check_change(
    principal: Principal, spec: AgentSpec, method: str, params: dict[str, Any]
) -> None:
    """A method passed on to the agent, or -32600 `above_ceiling`."""
    ceiling = principal.ceiling
    change = _change_of(method, params)
    if change is None:
        allowed = ceiling == "all"
    else:
        rules = spec.rules(ceiling)
        what, value = change
        allowed = (
            rules.allows_mode(value) if what == MODE_CHANGE else rules.allows_option(what, value)
        )
    if not allowed:
        named = f"{method} {change[0]}={change[1]!r}" if change else method
        raise InvalidRequest(
            f"Invalid Request: {named} is above this API key's ceiling {ceiling!r} "
            "(the agent's config names what each ceiling may change)",
            {"reason": "above_ceiling", "ceiling": ceiling},
        )


def remote_policy(principal: Principal) -> Policy:
    """A remote client is asked (it is the person at the editor), within the key's ceiling."""
    return "ask" if policy_rank(principal.ceiling) >= policy_rank("ask") else principal.ceiling


def _change_of(method: str, params: dict[str, Any]) -> tuple[str, str] | None:
    """(config id or MODE_CHANGE, value) a passed-on method sets; None for any other."""
    if method == "session/set_mode":
        return MODE_CHANGE, str(params.get("modeId"))
    if method == "session/set_config_option":
        return str(params.get("configId")), str(params.get("value"))
    if method == SET_MODEL_METHOD:
        return "model", str(params.get("model"))
    return None


def _within(spec: AgentSpec, field: str, path: object) -> str:
    """`path` resolved inside the agent's roots (a symlink that points out is refused),
    else -32602 naming it."""
    try:
        return resolve_within(spec, field, path)
    except PathRefused as refused:
        raise InvalidParams(f"Invalid params: {refused}", {"field": field, "path": path}) from None


__all__ = ["check_change", "remote_policy", "session_params", "system_prompt"]
