"""Search tools: glob (file names) and search_file_content (a regex over contents).

Both walk the local disk even when the editor owns reads (ACP has no listing
method). They never follow a symlink out of the directory searched: a result whose
real path leaves the search root is skipped, so `ws/link -> /` cannot turn a search
of the workspace into a search of the machine. A file's content is read through a
descriptor (`agentao/beneath.py`) of the path that was checked, so a file swapped for
a symlink mid-search is skipped, not followed. Directories in `ignored_dirs`
(`.git`, `node_modules`…) are skipped unless the search starts inside one.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
import threading
from pathlib import Path, PurePosixPath
from typing import Any

from agentao import beneath
from agentao.agent.events import Location, TextOutput
from agentao.agent.paths import PathAccess, PathError, glob_base, target
from agentao.agent.settings import FileLimits
from agentao.agent.tools.base import Tool, ToolContext, ToolError, ToolResult
from agentao.agent.tools.files import location

_MAX_LINE = 500  # characters of one matching line shown


class _TooBig(Exception):
    """A file over grep_max_file_bytes: counted as skipped, never read."""


def _root(ctx: ToolContext, args: dict[str, Any]) -> Path:
    path = args.get("path")
    if path is not None and not isinstance(path, str):
        raise ToolError("`path` must be a string")
    try:
        return target(ctx, path or ".", "read")
    except PathError as e:
        raise ToolError(str(e)) from e


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

    def _inside(self, root: Path, path: str) -> bool:
        return Path(os.path.realpath(path)).is_relative_to(root)


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
        if not root.is_dir():
            raise ToolError(f"{root} is not a directory")
        matches = await asyncio.to_thread(self._glob, root, pattern)
        limit = self.limits.glob_max_results
        lines = [str(m) for m in matches[:limit]]
        if len(matches) > limit:
            lines.append(f"[... {len(matches) - limit} more: limit glob_max_results={limit}]")
        body = "\n".join(lines) if lines else f"No files match {pattern!r} in {root}."
        return ToolResult(body, (TextOutput(body),), raw_output={"count": len(matches)})

    def _glob(self, root: Path, pattern: str) -> list[Path]:
        ignored = set(self.limits.ignored_dirs) - set(PurePosixPath(pattern).parts)
        out = []
        for p in root.glob(pattern):
            rel = p.relative_to(root)
            if ignored.intersection(rel.parts) or not self._inside(root, str(p)):
                continue
            out.append(p)
        return sorted(out)


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
        if not root.exists():
            raise ToolError(f"{root} does not exist")
        stop = threading.Event()
        try:
            lines, skipped = await asyncio.to_thread(self._grep, root, regex, include, stop)
        finally:
            stop.set()  # a cancelled search stops walking at the next file
        limit = self.limits.grep_max_matches
        shown = lines[:limit]
        if len(lines) > limit:
            shown.append(f"[... more matches not shown: limit grep_max_matches={limit}]")
        if skipped:
            shown.append(
                f"[{skipped} file(s) larger than grep_max_file_bytes="
                f"{self.limits.grep_max_file_bytes} skipped]"
            )
        body = "\n".join(shown) if lines else f"No matches for {pattern!r} in {root}."
        if not lines and skipped:
            body += "\n" + shown[-1]
        return ToolResult(body, (TextOutput(body),), raw_output={"matches": min(len(lines), limit)})

    def _grep(
        self, root: Path, regex: re.Pattern[str], include: str | None, stop: threading.Event
    ) -> tuple[list[str], int]:
        out: list[str] = []
        skipped = 0
        cap = self.limits.grep_max_matches + 1
        for path in self._files(root, include):
            if stop.is_set() or len(out) >= cap:
                break
            try:
                data = self._content(root, path)
            except _TooBig:
                skipped += 1
                continue
            if data is None or b"\0" in data[:8192]:
                continue  # binary
            shown = os.path.relpath(path, root) if root.is_dir() else path
            for n, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
                if regex.search(line):
                    out.append(f"{shown}:{n}: {line[:_MAX_LINE]}")
                    if len(out) >= cap:
                        break
        return out, skipped

    def _files(self, root: Path, include: str | None):
        if root.is_file():
            yield str(root)
            return
        ignored = set(self.limits.ignored_dirs)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d not in ignored)
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                if include and not _included(name, rel, include):
                    continue
                yield path

    def _content(self, root: Path, path: str) -> bytes | None:
        """The bytes of a file under `root` (a symlink's target, when it stays under it),
        or None to pass the file by; _TooBig past grep_max_file_bytes."""
        real = Path(path)
        if os.path.islink(path):
            real = Path(os.path.realpath(path))
            if not real.is_relative_to(root):
                return None
        try:
            with os.fdopen(beneath.open_regular(real), "rb") as f:
                if os.fstat(f.fileno()).st_size > self.limits.grep_max_file_bytes:
                    raise _TooBig(path)
                return f.read()
        except OSError:  # vanished, unreadable, not a regular file, or swapped for a link
            return None


def _included(name: str, rel: str, include: str) -> bool:
    """`*.py` matches by name at any depth; `src/**/*.py` by path (`**/` may match nothing)."""
    patterns = {include, include.removeprefix("**/"), include.replace("/**/", "/")}
    return any(fnmatch.fnmatch(s, p) for s in (name, rel) for p in patterns)


__all__ = ["Glob", "SearchFileContent"]
