"""The tools a session offers the model: the built-ins, plus MCP tools.

`todo_write` and `ask_user` live in their own modules (`tools/todo.py`,
`tools/ask_user.py`); they are picked up when present, by looking for a concrete
`Tool` subclass with that `name` that can be built without arguments.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
from collections.abc import Iterable

from agentao.agent.settings import FileLimits, ShellLimits, WebLimits
from agentao.agent.tools.base import Tool
from agentao.agent.tools.files import (
    DeleteFile,
    ListDirectory,
    MoveFile,
    ReadFile,
    Replace,
    WriteFile,
)
from agentao.agent.tools.search import Glob, SearchFileContent
from agentao.agent.tools.shell import RunShellCommand
from agentao.agent.tools.web import WebFetch

log = logging.getLogger(__name__)
_OPTIONAL = (
    ("agentao.agent.tools.todo", "todo_write"),
    ("agentao.agent.tools.ask_user", "ask_user"),
)


def builtin_tools(
    files: FileLimits | None = None,
    shell: ShellLimits | None = None,
    web: WebLimits | None = None,
) -> list[Tool]:
    """Every built-in tool, in the order the model sees them."""
    tools: list[Tool] = [
        ReadFile(files),
        ListDirectory(files),
        Glob(files),
        SearchFileContent(files),
        WriteFile(files),
        Replace(files),
        DeleteFile(files),
        MoveFile(files),
        RunShellCommand(shell),
        WebFetch(web),
    ]
    tools.extend(t for module, name in _OPTIONAL if (t := _optional_tool(module, name)))
    return tools


def _optional_tool(module_name: str, tool_name: str) -> Tool | None:
    for cls in _candidates(module_name, tool_name):
        try:
            return cls()
        except TypeError:
            log.warning("%s.%s needs arguments; not registered", module_name, cls.__name__)
    return None


@functools.cache
def _candidates(module_name: str, tool_name: str) -> tuple[type[Tool], ...]:
    """The module's concrete `Tool` classes named `tool_name`, looked up once per process:
    an imported module's classes stay what they are, and listing a module's members for
    every session that opens was a tenth of its CPU."""
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return ()
    return tuple(
        cls
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, Tool)
        and not inspect.isabstract(cls)
        and cls.__module__ == module_name
        and getattr(cls, "name", None) == tool_name
    )


def combine(builtins: Iterable[Tool], extra: Iterable[Tool]) -> list[Tool]:
    """Built-ins first, then `extra` (MCP tools); a name already taken is dropped."""
    out: dict[str, Tool] = {}
    for tool in (*builtins, *extra):
        if tool.name in out:
            log.warning("tool name %r offered twice; keeping the first", tool.name)
            continue
        out[tool.name] = tool
    return list(out.values())


def by_name(tools: Iterable[Tool]) -> dict[str, Tool]:
    return {t.name: t for t in tools}


__all__ = ["builtin_tools", "by_name", "combine"]
