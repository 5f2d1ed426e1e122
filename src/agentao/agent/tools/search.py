"""Search tools: glob (file names) and search_file_content (a regex over contents).

One file path for every tool: a search is decided by the permission engine like a
read of its root (a root outside the workspace asks), and then touches nothing but
what lies under that root. Names are enumerated on the local disk (ACP has no
listing method) through directory descriptors (`agentao/beneath.py` `walk`): a
symlink is a name, never entered or read, and a directory swapped for one mid-walk
is passed by. File contents are read through `ctx.env.read_text`, exactly as
read_file reads: through the client's `fs/read_text_file` when it offers one (so a
client that confines reads confines searches too; a file it refuses is counted, not
read behind its back), else through a descriptor of the checked path.

The work is bounded by `FileLimits`: `walk_max_entries` names enumerated,
`grep_max_files` files and `grep_max_total_bytes` bytes read, `grep_max_file_bytes`
per file; each stop is said in the result. Directories in `ignored_dirs` (`.git`,
`node_modules`…) are skipped unless the pattern or the search root names one.
"""

from __future__ import annotations

import asyncio
import fnmatch
import functools
import itertools
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from agentao import beneath
from agentao.agent.events import Location, TextOutput
from agentao.agent.paths import PathAccess, PathError, glob_base, target
from agentao.agent.settings import FileLimits
from agentao.agent.tools.base import Tool, ToolContext, ToolError, ToolResult
from agentao.agent.tools.files import location

_MAX_LINE = 500  # characters of one matching line shown
_BINARY_PROBE = 8192  # a NUL in this many leading characters: a binary file


def _root(ctx: ToolContext, args: dict[str, Any]) -> Path:
    path = args.get("path")
    if path is not None and not isinstance(path, str):
        raise ToolError("`path` must be a string")
    try:
        return target(ctx, path or ".", "read")
    except PathError as e:
        raise ToolError(str(e)) from e


def _root_kind(root: Path) -> str:
    """What the checked root is, looked at through descriptors ("dir", "file", …)."""
    try:
        return beneath.kind_of(root)
    except FileNotFoundError as e:
        raise ToolError(f"{root} does not exist") from e
    except OSError as e:
        raise ToolError(f"cannot search {root}: {e.strerror or e}") from e


def _pattern_escapes(pattern: str) -> bool:
    return pattern.startswith(("/", "~")) or ".." in PurePosixPath(pattern).parts


class _SearchTool(Tool):
    kind = "search"

    def __init__(self, limits: FileLimits | None = None):
        self.limits = limits or FileLimits()

    def locations(self, args: dict[str, Any], cwd: Path) -> tuple[Location, ...]:
        return location(args.get("path") or ".", cwd)

    def accesses(self, args: dict[str, Any], cwd: Path) -> tuple[PathAccess, ...]:
        path = args.get("path")
        return (PathAccess(path if isinstance(path, str) else ".", "read"),)

    def _entries(
        self, root: Path, enter: Any, stop: threading.Event
    ) -> Iterator[beneath.Entry | None]:
        """The walk of `root`, then None if it stopped at walk_max_entries."""
        walked = beneath.walk(root, enter)
        try:
            for n, entry in enumerate(walked):
                if stop.is_set():
                    return
                if n >= self.limits.walk_max_entries:
                    yield None
                    return
                yield entry
        finally:
            walked.close()


class Glob(_SearchTool):
    name = "glob"
    description = (
        "Find files whose path matches a glob pattern (`**` for any depth, e.g."
        " `src/**/*.py`), relative to `path` (default cwd). Sorted by path."
    )
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "A relative glob pattern."},
            "path": {"type": "string", "description": "Directory to search from."},
        },
        "required": ["pattern"],
    }

    def title(self, args: dict[str, Any]) -> str:
        where = f" in {args['path']}" if isinstance(args.get("path"), str) else ""
        return f"Glob `{args.get('pattern', '')}`{where}"

    def accesses(self, args: dict[str, Any], cwd: Path) -> tuple[PathAccess, ...]:
        own = super().accesses(args, cwd)
        pattern = args.get("pattern")
        if isinstance(pattern, str) and _pattern_escapes(pattern):
            # Show the engine where the pattern would reach (the tool refuses it anyway).
            base = os.path.join(own[0].path, glob_base(pattern))
            return (*own, PathAccess(base, "read"))
        return own

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern = args.get("pattern")
        if not isinstance(pattern, str) or not pattern.strip():
            raise ToolError("`pattern` must be a non-empty string")
        if _pattern_escapes(pattern) or "\0" in pattern:
            raise ToolError(
                "`pattern` must be relative without `..`; use `path` to search elsewhere"
            )
        root = _root(ctx, args)
        if _root_kind(root) != "dir":
            raise ToolError(f"{root} is not a directory")
        stop = threading.Event()
        try:
            matches, cut = await asyncio.to_thread(self._glob, root, pattern, stop)
        finally:
            stop.set()  # a cancelled glob stops walking at the next name
        return self._result(root, pattern, matches, cut)

    def _glob(self, root: Path, pattern: str, stop: threading.Event) -> tuple[list[Path], bool]:
        parts = tuple(p for p in PurePosixPath(pattern).parts if p != ".")
        ignored = set(self.limits.ignored_dirs) - set(parts)

        def enter(rel: PurePosixPath) -> bool:
            return rel.name not in ignored and _may_hold(parts, rel.parts)

        out: list[Path] = []
        for entry in self._entries(root, enter, stop):
            if entry is None:
                return sorted(out), True
            if _matches(parts, entry.rel.parts):
                out.append(root / entry.rel)
        return sorted(out), False

    def _result(self, root: Path, pattern: str, matches: list[Path], cut: bool) -> ToolResult:
        limit = self.limits.glob_max_results
        lines = [str(m) for m in matches[:limit]]
        if len(matches) > limit:
            lines.append(f"[... {len(matches) - limit} more: limit glob_max_results={limit}]")
        if cut:
            lines.append(_walk_cut(self.limits))
        body = "\n".join(lines) if matches else f"No files match {pattern!r} in {root}."
        if cut and not matches:
            body += "\n" + _walk_cut(self.limits)
        return ToolResult(body, (TextOutput(body),), raw_output={"count": len(matches)})


def _walk_cut(limits: FileLimits) -> str:
    return f"[stopped early: limit walk_max_entries={limits.walk_max_entries}]"


@functools.lru_cache(maxsize=4096)
def _matches(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """Whether path `parts` match glob `pattern` parts (`**` is any number of them)."""
    if not pattern:
        return not parts
    if pattern[0] == "**":
        return _matches(pattern[1:], parts) or (bool(parts) and _matches(pattern, parts[1:]))
    return (
        bool(parts)
        and fnmatch.fnmatchcase(parts[0], pattern[0])
        and _matches(pattern[1:], parts[1:])
    )


@functools.lru_cache(maxsize=4096)
def _may_hold(pattern: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    """Whether something below directory `parts` could match `pattern` (prunes the walk)."""
    if not parts:
        return bool(pattern)
    if not pattern:
        return False
    if pattern[0] == "**":
        return True
    return fnmatch.fnmatchcase(parts[0], pattern[0]) and _may_hold(pattern[1:], parts[1:])


@dataclass(slots=True)
class _Tally:
    """What one search did besides matching: what it passed by, and why it stopped."""

    lines: list[str] = field(default_factory=list)
    too_big: int = 0
    unreadable: int = 0
    bytes_read: int = 0
    stopped: str = ""  # the limit that stopped the search early, as "name=value"


class SearchFileContent(_SearchTool):
    name = "search_file_content"
    description = (
        "Search file contents for a regular expression (Python syntax) under `path`"
        " (default cwd), optionally only in files matching `include` (e.g. `*.py`)."
        " Returns `file:line: text` for each match."
    )
    parameters = {
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression."},
            "path": {"type": "string", "description": "File or directory to search."},
            "include": {"type": "string", "description": "Glob on file names or paths."},
        },
        "required": ["pattern"],
    }

    def title(self, args: dict[str, Any]) -> str:
        where = f" in {args['path']}" if isinstance(args.get("path"), str) else ""
        return f"Search `{args.get('pattern', '')}`{where}"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        pattern, include = args.get("pattern"), args.get("include")
        if not isinstance(pattern, str) or not pattern:
            raise ToolError("`pattern` must be a non-empty string")
        if include is not None and not isinstance(include, str):
            raise ToolError("`include` must be a glob string")
        try:
            regex = re.compile(pattern)
        except re.error as e:
            raise ToolError(f"invalid regular expression: {e}") from e
        root = _root(ctx, args)
        tally = _Tally()
        files, tally.stopped = await self._files(root, _root_kind(root), include)
        for rel, size in files:
            if not await self._search_one(ctx, root, rel, size, regex, tally):
                break
        return self._result(pattern, root, tally)

    async def _files(
        self, root: Path, kind: str, include: str | None
    ) -> tuple[list[tuple[PurePosixPath, int]], str]:
        """The files to read (relative to a directory root, with their size), and the
        limit that cut the list short ("" if none)."""
        if kind == "file":
            return [(PurePosixPath(), 0)], ""
        if kind != "dir":
            raise ToolError(f"{root} is neither a file nor a directory")
        stop = threading.Event()
        try:
            return await asyncio.to_thread(self._list_files, root, include, stop)
        finally:
            stop.set()  # a cancelled search stops walking at the next name

    def _list_files(
        self, root: Path, include: str | None, stop: threading.Event
    ) -> tuple[list[tuple[PurePosixPath, int]], str]:
        ignored = set(self.limits.ignored_dirs)
        cap = self.limits.grep_max_files
        out: list[tuple[PurePosixPath, int]] = []
        for entry in self._entries(root, lambda rel: rel.name not in ignored, stop):
            if entry is None:
                return out, f"walk_max_entries={self.limits.walk_max_entries}"
            if entry.kind != "file" or (include and not _included(entry.rel, include)):
                continue  # symlinks are names only: never followed out of the root
            if len(out) >= cap:
                return out, f"grep_max_files={cap}"
            out.append((entry.rel, entry.size))
        return out, ""

    async def _search_one(
        self,
        ctx: ToolContext,
        root: Path,
        rel: PurePosixPath,
        size: int,
        regex: re.Pattern[str],
        tally: _Tally,
    ) -> bool:
        """Read one file as read_file does and match it; False once a limit is reached."""
        limits = self.limits
        if size > limits.grep_max_file_bytes:
            tally.too_big += 1
            return True
        if tally.bytes_read + size > limits.grep_max_total_bytes:
            tally.stopped = f"grep_max_total_bytes={limits.grep_max_total_bytes}"
            return False
        path = root / rel if rel.parts else root
        text = await _read(ctx, path)
        if text is None:
            tally.unreadable += 1
            return True
        tally.bytes_read += len(text.encode("utf-8", "surrogateescape"))
        if tally.bytes_read > limits.grep_max_total_bytes:  # the client's copy was bigger
            tally.stopped = f"grep_max_total_bytes={limits.grep_max_total_bytes}"
            return False
        if "\0" not in text[:_BINARY_PROBE]:
            shown = str(rel) if rel.parts else str(root)
            room = limits.grep_max_matches + 1 - len(tally.lines)
            tally.lines.extend(itertools.islice(_matching_lines(shown, text, regex), room))
        return len(tally.lines) <= limits.grep_max_matches

    def _result(self, pattern: str, root: Path, tally: _Tally) -> ToolResult:
        limit = self.limits.grep_max_matches
        shown = tally.lines[:limit]
        if len(tally.lines) > limit:
            shown.append(f"[... more matches not shown: limit grep_max_matches={limit}]")
        notes = self._notes(tally)
        body = "\n".join([*shown, *notes])
        if not tally.lines:
            body = "\n".join([f"No matches for {pattern!r} in {root}.", *notes])
        return ToolResult(
            body, (TextOutput(body),), raw_output={"matches": min(len(tally.lines), limit)}
        )

    def _notes(self, tally: _Tally) -> list[str]:
        notes = []
        if tally.too_big:
            notes.append(
                f"[{tally.too_big} file(s) larger than grep_max_file_bytes="
                f"{self.limits.grep_max_file_bytes} skipped]"
            )
        if tally.unreadable:
            notes.append(f"[{tally.unreadable} file(s) could not be read (refused or vanished)]")
        if tally.stopped:
            notes.append(f"[stopped early: limit {tally.stopped}]")
        return notes


async def _read(ctx: ToolContext, path: Path) -> str | None:
    """The text of `path` through the tool environment, as read_file gets it: None when
    it cannot be read (refused by the client, vanished, swapped for a symlink), "" for a
    binary file (nothing to match)."""
    try:
        return await ctx.env.read_text(path)
    except ValueError:
        return ""
    except OSError:
        return None


def _matching_lines(shown: str, text: str, regex: re.Pattern[str]) -> Iterator[str]:
    for n, line in enumerate(text.splitlines(), 1):
        if regex.search(line):
            yield f"{shown}:{n}: {line[:_MAX_LINE]}"


def _included(rel: PurePosixPath, include: str) -> bool:
    """`*.py` matches by name at any depth; `src/**/*.py` by path (`**/` may match nothing)."""
    patterns = {include, include.removeprefix("**/"), include.replace("/**/", "/")}
    return any(fnmatch.fnmatch(s, p) for s in (rel.name, str(rel)) for p in patterns)


__all__ = ["Glob", "SearchFileContent"]
