"""File tools: read_file, list_directory, write_file, replace, delete_file, move_file.

Reads and writes go through `ctx.env` (local disk or the editor's buffers). Listing,
deleting and moving have no ACP client method, so they act on the local disk. Every
path is resolved by `paths.target` right before use, which also fails the call if
the path points elsewhere than when the permission engine looked at it; the local
disk is then reached through descriptors (`agentao/beneath.py`), so a symlink that
appears in the path after that is refused, never followed.
"""

from __future__ import annotations

import asyncio
import fnmatch
from pathlib import Path
from typing import Any

from agentao import beneath
from agentao.agent.events import DiffOutput, Location, TextOutput
from agentao.agent.paths import PathAccess, PathError, absolute, target
from agentao.agent.settings import FileLimits, cap_text
from agentao.agent.tools.base import Tool, ToolContext, ToolError, ToolResult


def _str_arg(args: dict[str, Any], name: str, *, required: bool = True) -> str | None:
    value = args.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        raise ToolError(f"`{name}` must be a non-empty string")
    return value


def _target(ctx: ToolContext, path: str, op: str = "read") -> Path:
    try:
        return target(ctx, path, op)  # type: ignore[arg-type]
    except PathError as e:
        raise ToolError(str(e)) from e


def location(path: object, cwd: Path, line: int | None = None) -> tuple[Location, ...]:
    """The absolute location of a path argument, or () when it is not a valid path."""
    try:
        return (Location(str(absolute(path, cwd)), line),) if isinstance(path, str) else ()
    except PathError:
        return ()


async def _read_existing(ctx: ToolContext, path: Path) -> str | None:
    try:
        return await ctx.env.read_text(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise ToolError(f"cannot read {path}: {e}") from e


async def _write(ctx: ToolContext, path: Path, content: str) -> None:
    try:
        await ctx.env.write_text(path, content)
    except OSError as e:
        raise ToolError(f"cannot write {path}: {e.strerror or e}") from e


class _PathTool(Tool):
    """A tool whose `arg` names one path, touched with `op`."""

    arg = "file_path"
    op = "read"
    verb = ""

    def __init__(self, limits: FileLimits | None = None):
        self.limits = limits or FileLimits()

    def title(self, args: dict[str, Any]) -> str:
        return f"{self.verb} {args.get(self.arg, '')}".strip()

    def locations(self, args: dict[str, Any], cwd: Path) -> tuple[Location, ...]:
        return location(args.get(self.arg), cwd)

    def accesses(self, args: dict[str, Any], cwd: Path) -> tuple[PathAccess, ...]:
        path = args.get(self.arg)
        return (PathAccess(path if isinstance(path, str) else "", self.op),)  # type: ignore[arg-type]


class ReadFile(_PathTool):
    name = "read_file"
    kind = "read"
    verb = "Read"
    description = (
        "Read a text file. `offset` is the 1-based line to start at, `limit` the number of"
        " lines (default 2000). Long output says how to read on."
    )
    parameters = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "Absolute or relative to cwd."},
            "offset": {"type": "integer", "minimum": 1, "description": "First line (1-based)."},
            "limit": {"type": "integer", "minimum": 1, "description": "Number of lines."},
        },
        "required": ["file_path"],
    }

    def locations(self, args: dict[str, Any], cwd: Path) -> tuple[Location, ...]:
        offset = args.get("offset")
        line = offset if isinstance(offset, int) and not isinstance(offset, bool) else None
        return location(args.get(self.arg), cwd, line)

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = _target(ctx, _str_arg(args, "file_path"))  # type: ignore[arg-type]
        offset = _int_arg(args, "offset") or 1
        limit = _int_arg(args, "limit") or self.limits.read_default_lines
        try:
            text = await ctx.env.read_text(path, offset, limit + 1)
        except FileNotFoundError as e:
            raise ToolError(f"{path} does not exist") from e
        except IsADirectoryError as e:
            raise ToolError(f"{path} is a directory; use list_directory") from e
        except (OSError, ValueError) as e:
            raise ToolError(f"cannot read {path}: {e}") from e
        lines = text.splitlines(keepends=True)
        more = len(lines) > limit
        lines = [self._cap_line(line) for line in lines[:limit]]
        body, cut = cap_text("".join(lines), self.limits.read_max_chars, "read_max_chars")
        if more:
            last = offset + len(lines) - 1
            body += (
                f"\n[showing lines {offset}-{last}; more follow: read on with offset={last + 1}]"
            )
        elif not lines and offset > 1:
            body = f"[the file has fewer than {offset} lines]"
        return ToolResult(body, (TextOutput(body),), raw_output={"truncated": more or cut})

    def _cap_line(self, line: str) -> str:
        limit = self.limits.read_max_line_chars
        if len(line.rstrip("\n")) <= limit:
            return line
        return line[:limit] + f" [... line cut at read_max_line_chars={limit}]\n"


def _int_arg(args: dict[str, Any], name: str) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ToolError(f"`{name}` must be a positive integer")
    return value


class ListDirectory(_PathTool):
    name = "list_directory"
    kind = "read"
    verb = "List"
    arg = "path"
    description = "List a directory: subdirectories first (with a trailing /), then files."
    parameters = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Absolute or relative to cwd."},
            "ignore": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Glob patterns of names to leave out.",
            },
        },
        "required": ["path"],
    }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = _target(ctx, _str_arg(args, "path"))  # type: ignore[arg-type]
        ignore = args.get("ignore") or []
        if not isinstance(ignore, list) or not all(isinstance(i, str) for i in ignore):
            raise ToolError("`ignore` must be a list of glob patterns")
        try:
            entries = await asyncio.to_thread(_list, path, ignore)
        except NotADirectoryError as e:
            raise ToolError(f"{path} is not a directory") from e
        except OSError as e:
            raise ToolError(f"cannot list {path}: {e.strerror or e}") from e
        limit = self.limits.list_max_entries
        lines = entries[:limit]
        if len(entries) > limit:
            lines.append(
                f"[... {len(entries) - limit} more entries: limit list_max_entries={limit}]"
            )
        body = f"{path}:\n" + ("\n".join(lines) if lines else "(empty)")
        return ToolResult(body, (TextOutput(body),))


def _list(path: Path, ignore: list[str]) -> list[str]:
    dirs, files = [], []
    for entry in beneath.scandir(path):
        if any(fnmatch.fnmatch(entry.name, pat) for pat in ignore):
            continue
        if entry.is_symlink():
            files.append(f"{entry.name}@")
        elif entry.is_dir(follow_symlinks=False):
            dirs.append(f"{entry.name}/")
        else:
            files.append(entry.name)
    return sorted(dirs) + sorted(files)


class WriteFile(_PathTool):
    name = "write_file"
    kind = "edit"
    verb = "Write"
    op = "write"
    description = "Create or overwrite a text file with `content` (parent directories are created)."
    parameters = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "Absolute or relative to cwd."},
            "content": {"type": "string", "description": "The whole new content."},
        },
        "required": ["file_path", "content"],
    }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = _target(ctx, _str_arg(args, "file_path"), "write")  # type: ignore[arg-type]
        content = args.get("content")
        if not isinstance(content, str):
            raise ToolError("`content` must be a string")
        if path.is_dir():
            raise ToolError(f"{path} is a directory")
        old = await _read_existing(ctx, path)
        await _write(ctx, path, content)
        n = content.count("\n") + (1 if content and not content.endswith("\n") else 0)
        verb = "Created" if old is None else "Wrote"
        return ToolResult(f"{verb} {path} ({n} lines).", (DiffOutput(str(path), old, content),))


class Replace(_PathTool):
    name = "replace"
    kind = "edit"
    verb = "Edit"
    op = "write"
    description = (
        "Replace `old_string` with `new_string` in a file. `old_string` must match exactly"
        " (whitespace included) and once, unless `replace_all` is true."
    )
    parameters = {
        "type": "object",
        "properties": {
            "file_path": {"type": "string", "description": "Absolute or relative to cwd."},
            "old_string": {"type": "string", "description": "Exact text to replace."},
            "new_string": {"type": "string", "description": "Replacement text."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence."},
        },
        "required": ["file_path", "old_string", "new_string"],
    }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = _target(ctx, _str_arg(args, "file_path"), "write")  # type: ignore[arg-type]
        old_string, new_string = args.get("old_string"), args.get("new_string")
        if not isinstance(old_string, str) or not old_string:
            raise ToolError("`old_string` must be a non-empty string (use write_file to create)")
        if not isinstance(new_string, str):
            raise ToolError("`new_string` must be a string")
        if old_string == new_string:
            raise ToolError("`old_string` and `new_string` are the same")
        old = await _read_existing(ctx, path)
        if old is None:
            raise ToolError(f"{path} does not exist")
        count = old.count(old_string)
        if count == 0:
            raise ToolError(f"`old_string` not found in {path}; read the file and copy it exactly")
        if count > 1 and not args.get("replace_all"):
            raise ToolError(
                f"`old_string` occurs {count} times in {path}; add surrounding context to make it"
                " unique, or set replace_all"
            )
        new = old.replace(old_string, new_string)
        await _write(ctx, path, new)
        what = f"{count} occurrences" if count > 1 else "1 occurrence"
        return ToolResult(f"Replaced {what} in {path}.", (DiffOutput(str(path), old, new),))


class DeleteFile(_PathTool):
    name = "delete_file"
    kind = "delete"
    verb = "Delete"
    op = "relink"
    description = "Delete a file (not a directory). A symlink is removed, not its target."
    parameters = {
        "type": "object",
        "properties": {"file_path": {"type": "string", "description": "The file to delete."}},
        "required": ["file_path"],
    }

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        path = _target(ctx, _str_arg(args, "file_path"), "relink")  # type: ignore[arg-type]
        try:
            await asyncio.to_thread(beneath.unlink, path)
        except FileNotFoundError as e:
            raise ToolError(f"{path} does not exist") from e
        except IsADirectoryError as e:
            raise ToolError(f"{path} is a directory; delete_file removes files only") from e
        except OSError as e:
            raise ToolError(f"cannot delete {path}: {e.strerror or e}") from e
        return ToolResult(f"Deleted {path}.", (TextOutput(f"Deleted {path}"),))


class MoveFile(Tool):
    name = "move_file"
    kind = "move"
    description = "Move or rename a file or directory. Fails if `destination` exists."
    parameters = {
        "type": "object",
        "properties": {
            "source": {"type": "string", "description": "What to move."},
            "destination": {"type": "string", "description": "The new path."},
        },
        "required": ["source", "destination"],
    }

    def __init__(self, limits: FileLimits | None = None):
        self.limits = limits or FileLimits()

    def title(self, args: dict[str, Any]) -> str:
        return f"Move {args.get('source', '')} → {args.get('destination', '')}"

    def locations(self, args: dict[str, Any], cwd: Path) -> tuple[Location, ...]:
        return location(args.get("source"), cwd) + location(args.get("destination"), cwd)

    def accesses(self, args: dict[str, Any], cwd: Path) -> tuple[PathAccess, ...]:
        return tuple(
            PathAccess(p if isinstance(p, str) else "", "relink")
            for p in (args.get("source"), args.get("destination"))
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        source = _target(ctx, _str_arg(args, "source"), "relink")  # type: ignore[arg-type]
        dest = _target(ctx, _str_arg(args, "destination"), "relink")  # type: ignore[arg-type]
        try:
            await asyncio.to_thread(beneath.rename, source, dest)
        except FileNotFoundError as e:
            raise ToolError(f"{source} does not exist") from e
        except FileExistsError as e:
            raise ToolError(f"{dest} already exists; delete it first or pick another name") from e
        except OSError as e:
            raise ToolError(f"cannot move {source} to {dest}: {e.strerror or e}") from e
        return ToolResult(f"Moved {source} to {dest}.", (TextOutput(f"Moved {source} → {dest}"),))


__all__ = [
    "DeleteFile",
    "ListDirectory",
    "MoveFile",
    "ReadFile",
    "Replace",
    "WriteFile",
    "location",
]
