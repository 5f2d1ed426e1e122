"""The tool registry: built-ins, names, kinds, schemas, and combining with MCP tools."""

from __future__ import annotations

import re
from typing import Any

from agentao.agent.tools.base import Tool, ToolContext, ToolResult
from agentao.agent.tools.registry import builtin_tools, by_name, combine

KINDS = {
    "read_file": "read",
    "list_directory": "read",
    "glob": "search",
    "search_file_content": "search",
    "write_file": "edit",
    "replace": "edit",
    "delete_file": "delete",
    "move_file": "move",
    "run_shell_command": "execute",
    "web_fetch": "fetch",
}


class Extra(Tool):
    kind = "other"
    description = ""
    parameters: dict[str, Any] = {"type": "object"}

    def __init__(self, name: str):
        self.name = name

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        return ToolResult("")


def test_builtin_tools_names_and_kinds() -> None:
    tools = by_name(builtin_tools())
    for name, kind in KINDS.items():
        assert tools[name].kind == kind
    assert set(tools) - set(KINDS) <= {"todo_write", "ask_user"}


def test_schemas_are_valid_function_specs() -> None:
    for tool in builtin_tools():
        spec = tool.schema()["function"]
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", spec["name"])
        assert spec["description"]
        assert spec["parameters"]["type"] == "object"
        assert set(spec["parameters"].get("required", [])) <= set(spec["parameters"]["properties"])


def test_combine_keeps_builtins_first_and_drops_duplicates() -> None:
    tools = combine(builtin_tools(), [Extra("mcp__x__a"), Extra("read_file")])
    names = [t.name for t in tools]
    assert names[-1] == "mcp__x__a"
    assert names.count("read_file") == 1
    assert by_name(tools)["read_file"].kind == "read"


def test_the_optional_tools_are_looked_up_once_not_per_session(monkeypatch) -> None:
    """Each session builds its tools; listing the optional tools' modules for every one
    was a tenth of opening a session, so it happens once per process."""
    import inspect

    import agentao.agent.tools.registry as registry

    builtin_tools()  # this process's lookup, if no test made it yet
    listed = []
    real = inspect.getmembers
    monkeypatch.setattr(registry.inspect, "getmembers", lambda *a: listed.append(a[0]) or real(*a))
    first, second = builtin_tools(), builtin_tools()
    assert listed == []
    names = [t.name for t in first]
    assert names[-2:] == ["todo_write", "ask_user"] and names == [t.name for t in second]
    assert all(a is not b for a, b in zip(first, second, strict=True))  # each session its own
