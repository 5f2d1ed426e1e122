"""The caller's own tools in a Chat Completions request: checked before the agent sees anything.

A request may carry `tools` (function tools the *caller* runs), and a later request
carries their results (`role: tool` messages after an assistant message with
`tool_calls`). This module reads both and refuses bad input with a 400 naming it:
a tool that is not a function, a name OpenAI would refuse or given twice, parameters
that are not a JSON Schema object, a `tool_choice` the gateway cannot honour, a result
without a `tool_call_id`. What is done with them is tool_bridge.py's.

`tool_choice`: `auto` (the default) offers the tools; `none` does not offer them;
`required` and a named function would force the agent's model to call a tool, which a
gateway in front of an agent cannot do, so they are refused (naming `tool_choice`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from agentao.gateway.errors import BadRequest, unsupported

# OpenAI's rule for a function name: what the caller's tools may be called.
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, slots=True)
class CallerTool:
    """One function tool the caller runs, as it declared it."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """A `role: tool` message: the caller's answer to one call."""

    call_id: str
    text: str


def parse_tools(raw: list[Any] | None, tool_choice: Any, limit: int) -> tuple[CallerTool, ...]:
    """The tools to offer the agent (none for `tool_choice: "none"`); 400 naming what is bad."""
    offered = _choice(tool_choice, bool(raw))
    if not raw:
        return ()
    if len(raw) > limit:
        raise BadRequest(
            f"'tools' lists {len(raw)} tools, above max_caller_tools={limit}", param="tools"
        )
    tools: dict[str, CallerTool] = {}
    for i, item in enumerate(raw):
        tool = _tool(item, f"tools[{i}]")
        if tool.name in tools:
            raise BadRequest(
                f"tools[{i}]: the name {tool.name!r} is given twice",
                param=f"tools[{i}].function.name",
                code="duplicate_tool_name",
            )
        tools[tool.name] = tool
    return tuple(tools.values()) if offered else ()


def _choice(choice: Any, has_tools: bool) -> bool:
    """Whether the tools are offered; 400 for a choice the gateway cannot honour."""
    if choice is None or choice == "auto":
        return True
    if choice == "none":
        return False
    if choice == "required" or isinstance(choice, dict):
        raise unsupported(
            "tool_choice",
            f"{choice!r} would force the agent's model to call a tool, which the gateway "
            "cannot do: use 'auto' or 'none'",
        )
    raise BadRequest(
        f"'tool_choice' {choice!r} is not 'none', 'auto' or 'required'", param="tool_choice"
    )


def _tool(item: Any, where: str) -> CallerTool:
    if not isinstance(item, dict) or item.get("type") != "function":
        raise unsupported(f"{where}.type", "only function tools can be offered to an agent")
    function = item.get("function")
    if not isinstance(function, dict):
        raise BadRequest(f"{where}.function must be an object", param=f"{where}.function")
    name = function.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        raise BadRequest(
            f"{where}.function.name must be 1 to 64 of [A-Za-z0-9_-]",
            param=f"{where}.function.name",
        )
    description = function.get("description") or ""
    if not isinstance(description, str):
        raise BadRequest(
            f"{where}.function.description must be a string",
            param=f"{where}.function.description",
        )
    return CallerTool(name, description, _schema(function.get("parameters"), where))


def _schema(parameters: Any, where: str) -> dict[str, Any]:
    """The tool's input schema: absent means no arguments; else a JSON Schema object."""
    param = f"{where}.function.parameters"
    if parameters is None:
        return {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise BadRequest(
            f"{param} must be a JSON Schema object", param=param, code="invalid_tool_schema"
        )
    kind = parameters.get("type", "object")
    if kind != "object" or not isinstance(parameters.get("properties", {}), dict):
        raise BadRequest(
            f"{param} must be a JSON Schema of type 'object' (with 'properties' an object)",
            param=param,
            code="invalid_tool_schema",
        )
    return parameters


def response_tools(raw: list[Any] | None) -> list[Any] | None:
    """Responses API tools (`{"type": "function", "name", "parameters", ...}`) in Chat
    Completions' shape, for `parse_tools`; any other kind is left for it to refuse."""
    if not raw:
        return raw
    out = []
    for item in raw:
        if isinstance(item, dict) and item.get("type") == "function" and "function" not in item:
            fields = ("name", "description", "parameters")
            item = {"type": "function", "function": {k: item[k] for k in fields if k in item}}
        out.append(item)
    return out


def call_outputs(raw_input: Any) -> tuple[list[ToolResult], list[Any]]:
    """A Responses `input`'s `function_call_output` items as results, and the other items."""
    if not isinstance(raw_input, list):
        return [], raw_input
    results, rest = [], []
    for i, item in enumerate(raw_input):
        if not isinstance(item, dict) or item.get("type") != "function_call_output":
            rest.append(item)
            continue
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            where = f"input[{i}].call_id"
            raise BadRequest(f"{where} must name the call this answers", param=where)
        results.append(ToolResult(call_id, _text(item.get("output"), f"input[{i}].output")))
    return results, rest


def tool_results(messages: list[Any]) -> list[ToolResult]:
    """The `role: tool` messages that end `messages` (the answers to the last calls)."""
    found: list[ToolResult] = []
    for i in range(len(messages) - 1, -1, -1):
        m = messages[i]
        if not isinstance(m, dict) or m.get("role") != "tool":
            break
        call_id = m.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            where = f"messages[{i}].tool_call_id"
            raise BadRequest(f"{where} must name the call this answers", param=where)
        found.append(ToolResult(call_id, _text(m.get("content"), f"messages[{i}].content")))
    return found[::-1]


def asked_calls(messages: list[Any]) -> list[str]:
    """The ids of the tool calls the last assistant message asked for (none: none)."""
    for m in reversed(messages):
        if isinstance(m, dict) and m.get("role") == "assistant":
            calls = m.get("tool_calls") or ()
            return [c["id"] for c in calls if isinstance(c, dict) and isinstance(c.get("id"), str)]
    return []


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(
        isinstance(p, dict) and isinstance(p.get("text"), str) for p in content
    ):
        return "\n".join(p["text"] for p in content)
    raise BadRequest(f"{where} must be a string or a list of text parts", param=where)


__all__ = [
    "CallerTool",
    "ToolResult",
    "asked_calls",
    "call_outputs",
    "parse_tools",
    "response_tools",
    "tool_results",
]
