"""v2 session config as ACP v1: the wire translation the client library and the gateway share.

v2 has no session modes: a session's mode is its config option of category `mode`
(spec/acp-schema.v2.json), and config options are named by `configId`. A v1 peer of a
v2 one (the client library reading a v2 agent, a remote v1 client on a v2 agent through
the gateway) is shown v1's shapes, made here once:

configOptions     each option with `id` for `configId`, its groups' `group` for `groupId`;
                  an option of a type v1 has not (neither `select` nor `boolean`) left out
modes             from the mode option: `availableModes` its values with their names,
                  `currentModeId` its current value (absent when there is no mode option)
set_config_option a v1 client's params in v2: an untagged value is v1's default, a value
                  id, which v2 tags `type: "id"`
availableCommands a v2 result's or update's commands as v1's (each untagged; only
                  `command`s with text input: v1 has no other kind)
current_mode_update   what a v2 `config_option_update` means for v1's mode, when the mode
                  option's value is not the one the reader knew

`config_option_v2` (v1 -> v2) lives in from_v1.py, its mirror.
"""

from __future__ import annotations

from typing import Any

from agentao.protocol.v2.from_v1 import renamed_option

MODE_CATEGORY = "mode"
V1_OPTION_TYPES = frozenset({"select", "boolean"})  # v2 may add custom types; v1 has two
VALUE_ID_TAG = "id"  # v2's tag of a value id; v1 leaves it untagged


def config_option_v1(option: dict[str, Any]) -> dict[str, Any]:
    """One v2 config option (wire dict) in v1's shape."""
    return renamed_option(option, ("configId", "id"), ("groupId", "group"))


def config_options_v1(options: Any) -> list[dict[str, Any]]:
    """v2 `configOptions` in v1's shape (the options v1 has a type for)."""
    return [
        config_option_v1(o)
        for o in options or ()
        if isinstance(o, dict) and o.get("type") in V1_OPTION_TYPES
    ]


def mode_option(options: Any) -> dict[str, Any] | None:
    """The config option of category `mode` among v2 `configOptions` (wire dicts)."""
    for option in options or ():
        if isinstance(option, dict) and option.get("category") == MODE_CATEGORY:
            return option
    return None


def modes_v1(options: Any) -> dict[str, Any] | None:
    """v1's `modes` (SessionModeState) from v2 `configOptions`; None with no mode option."""
    option = mode_option(options)
    current = option.get("currentValue") if option is not None else None
    if option is None or not isinstance(current, str):
        return None
    available = [
        {"id": c["value"], "name": c.get("name") or c["value"]}
        | ({"description": c["description"]} if c.get("description") else {})
        for c in _choices(option.get("options"))
    ]
    return {"currentModeId": current, "availableModes": available}


def _choices(options: Any) -> list[dict[str, Any]]:
    """A select option's values, grouped ones flattened."""
    found: list[dict[str, Any]] = []
    for item in options or ():
        inner = item.get("options") if isinstance(item, dict) else None
        for choice in inner if isinstance(inner, list) else (item,):
            if isinstance(choice, dict) and isinstance(choice.get("value"), str):
                found.append(choice)
    return found


def command_v1(command: dict[str, Any]) -> dict[str, Any]:
    """A v2 command (tagged `command`) in v1: untagged, its text input untagged."""
    wire = {k: v for k, v in command.items() if k != "type"}
    given = command.get("input")
    if isinstance(given, dict):
        wire["input"] = {k: v for k, v in given.items() if k != "type"}
    return wire


def commands_v1(commands: Any) -> list[dict[str, Any]]:
    """v2 `availableCommands` in v1: the `command`s (text input or none), untagged; v1
    has no other kind of command, so a custom one is left out."""
    given = commands if isinstance(commands, list) else []
    return [
        command_v1(c)
        for c in given
        if isinstance(c, dict)
        and c.get("type") == "command"
        and (not isinstance(c.get("input"), dict) or c["input"].get("type") == "text")
    ]


def session_result_v1(result: dict[str, Any]) -> dict[str, Any]:
    """A v2 session/new or session/resume result as v1's session/new or session/load
    result: `configOptions` in v1's shape and `modes` from the mode option."""
    wire = {k: v for k, v in result.items() if k not in ("configOptions", "availableCommands")}
    options = result.get("configOptions")
    if options is not None:
        wire["configOptions"] = config_options_v1(options)
    modes = modes_v1(options)
    if modes is not None:
        wire["modes"] = modes
    return wire


def set_config_params_v2(params: dict[str, Any]) -> dict[str, Any]:
    """A v1 `session/set_config_option`'s params in v2 (a value id tagged `type: "id"`)."""
    if "type" in params:
        return params
    return {**params, "type": VALUE_ID_TAG}


def set_config_params_v1(params: dict[str, Any]) -> dict[str, Any]:
    """A v2 `session/set_config_option`'s params in v1 (a value id's `type: "id"` tag
    dropped: v1 reads an untagged value as one)."""
    return {k: v for k, v in params.items() if not (k == "type" and v == VALUE_ID_TAG)}


def mode_change(update: dict[str, Any], known: str | None) -> dict[str, Any] | None:
    """The v1 `current_mode_update` a v2 `config_option_update` means, if its mode
    option's value is not `known` (the mode the reader had); else None."""
    option = mode_option(update.get("configOptions"))
    current = option.get("currentValue") if option is not None else None
    if not isinstance(current, str) or current == known:
        return None
    return {"sessionUpdate": "current_mode_update", "currentModeId": current}


__all__ = [
    "MODE_CATEGORY",
    "VALUE_ID_TAG",
    "command_v1",
    "commands_v1",
    "config_option_v1",
    "config_options_v1",
    "mode_change",
    "mode_option",
    "modes_v1",
    "session_result_v1",
    "set_config_params_v1",
    "set_config_params_v2",
]
