"""File checkpoints: what each turn changed in the workspace, and the bytes before it.

Theory of operation
-------------------
A turn's checkpoint is one manifest, `<root>/<session id>/turn-<N>.json`, naming each
workspace file the turn changed (by its path relative to the session's cwd) with

- `prior`: the file's state before the turn first touched it: the sha256 of its bytes
  (kept once, content-addressed, in `<root>/<session id>/blobs/`), `"absent"` (the turn
  created it), or `null` with a `reason` (not restorable: over a bound, a symlink, or
  changed by a shell command whose prior bytes were never read);
- `after`: the sha256 of what the agent left there (`"absent"`: it deleted it; `null`:
  unknown). A rewind compares the disk with it to find changes made outside the agent.

How a change is seen:

- our file tools (`kind` edit, delete, move): before the call, each path the tool
  touches (its `accesses`) has its prior bytes read, the first time in the turn;
  after the call, its new hash is recorded;
- a shell command (`kind` execute): the workspace's files are listed with their size
  and mtime before and after (no bytes are read: `scan_max_files` bounds the walk, and
  `skip_dirs` are not walked: `.git`, and the trees tools rebuild such as `.venv` and
  `node_modules`). A file that appeared is restorable (by removal); one that changed or
  vanished is restorable only if its prior bytes were already kept (an earlier tool
  call of the turn), else it is recorded not restorable.

MCP tools and the client's terminal are not watched (their effects are the server's or
the editor's). The root is the agent's state directory (server/opening.py), never the
project's own git. Bounds are `CheckpointLimits`: bytes kept per turn, per session, and
files per turn; what is over them is recorded, not restorable, and said so.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import logging
import os
import shutil
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from agentao import beneath
from agentao.agent.paths import PathError, resolve

__all__ = [
    "ABSENT",
    "CheckpointLimits",
    "Checkpoints",
    "FileRecord",
    "Watch",
    "checked_relative",
    "file_state",
    "forget",
    "plain_name",
    "tool_paths",
]

log = logging.getLogger("agentao.agent")
ABSENT = "absent"  # a file's state when there was none at that path
MANIFEST_PREFIX = "turn-"
WATCHED_KINDS = frozenset({"edit", "delete", "move"})
# Never listed by a shell scan: the project's history, and the trees tools rebuild
# (a virtualenv and node_modules made this checkout's scan 40 times slower).
SKIPPED_DIRS = (
    ".git",
    "node_modules",
    ".venv",
    "venv",
    "__pycache__",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
)
_SHA_CHARS = frozenset("0123456789abcdef")


@dataclass(frozen=True, slots=True)
class CheckpointLimits:
    """The named bounds of file checkpoints (AGENTAO_CHECKPOINT_* variables)."""

    turn_bytes: int = 64 * 1024 * 1024  # AGENTAO_CHECKPOINT_TURN_BYTES: prior bytes one turn keeps
    session_bytes: int = 512 * 1024 * 1024  # AGENTAO_CHECKPOINT_SESSION_BYTES: all of a session's
    turn_files: int = 1000  # AGENTAO_CHECKPOINT_TURN_FILES: files one turn records
    scan_max_files: int = 50_000  # AGENTAO_CHECKPOINT_SCAN_FILES: files a shell scan lists
    # AGENTAO_CHECKPOINT_SKIP_DIRS (comma-separated names): directories a shell scan skips
    skip_dirs: tuple[str, ...] = SKIPPED_DIRS
    enabled: bool = True  # AGENTAO_CHECKPOINTS=off turns them off

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> CheckpointLimits:
        d = cls()
        off = env.get("AGENTAO_CHECKPOINTS", "").strip().lower() in ("0", "off", "false", "no")
        return cls(
            turn_bytes=_count(env, "AGENTAO_CHECKPOINT_TURN_BYTES", d.turn_bytes),
            session_bytes=_count(env, "AGENTAO_CHECKPOINT_SESSION_BYTES", d.session_bytes),
            turn_files=_count(env, "AGENTAO_CHECKPOINT_TURN_FILES", d.turn_files),
            scan_max_files=_count(env, "AGENTAO_CHECKPOINT_SCAN_FILES", d.scan_max_files),
            skip_dirs=_names(env, "AGENTAO_CHECKPOINT_SKIP_DIRS", d.skip_dirs),
            enabled=not off,
        )


def _names(env: Mapping[str, str], name: str, default: tuple[str, ...]) -> tuple[str, ...]:
    if name not in env:
        return default
    names = tuple(n.strip() for n in env[name].split(",") if n.strip())
    if any("/" in n or n in (".", "..") for n in names):
        raise ValueError(f"{name} names directories by their name only: {env[name]!r}")
    return names


def _count(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        raise ValueError(f"{name}={raw!r} is not a whole number")
    return int(raw)


@dataclass(slots=True)
class FileRecord:
    """One file in a turn's checkpoint (see the module docstring)."""

    prior: str | None  # sha256, ABSENT, or None: not restorable
    after: str | None = None  # sha256, ABSENT, or None: unknown
    reason: str = ""  # why `prior` is None

    def to_json(self) -> dict[str, Any]:
        return {"prior": self.prior, "after": self.after, "reason": self.reason}

    @classmethod
    def from_json(cls, data: object) -> FileRecord:
        if not isinstance(data, dict):
            raise ValueError("a checkpoint record is not an object")
        prior, after, reason = data.get("prior"), data.get("after"), data.get("reason", "")
        for value in (prior, after):
            if value is not None and value != ABSENT and not is_sha(value):
                raise ValueError(f"a checkpoint record names no hash: {value!r}")
        return cls(prior, after, reason if isinstance(reason, str) else "")


def is_sha(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _SHA_CHARS


def checked_relative(rel: str) -> PurePosixPath:
    """A manifest's path, refused (ValueError) unless plainly inside the cwd: relative,
    no `..`, no empty part, no NUL, spelled as we write it. A tampered record naming
    `../x` or `/etc/x` stops here."""
    path = PurePosixPath(rel)
    if not rel or "\0" in rel or path.is_absolute() or any(p in ("..", "") for p in path.parts):
        raise ValueError(f"a checkpoint names a path outside the workspace: {rel!r}")
    if path.as_posix() != rel:  # only the spelling we write: no `./a`, `a//b`, `a/`
        raise ValueError(f"a checkpoint names a path outside the workspace: {rel!r}")
    return path


def file_state(path: Path) -> str:
    """What is at `path` now: its bytes' sha256, ABSENT, or "link"/"dir"/"other"."""
    try:
        st = beneath.lstat(path)
    except FileNotFoundError:
        return ABSENT
    if not stat.S_ISREG(st.st_mode):
        return (
            "link" if stat.S_ISLNK(st.st_mode) else "dir" if stat.S_ISDIR(st.st_mode) else "other"
        )
    return hashlib.sha256(beneath.read_bytes(path)).hexdigest()


def plain_name(name: str) -> bool:
    """Whether `name` is one path component (a session id as a directory name)."""
    return bool(name) and "/" not in name and "\0" not in name and name not in (".", "..")


def forget(root: Path, session_id: str) -> None:
    """Remove a deleted session's checkpoints (a name that is not plain removes nothing)."""
    if plain_name(session_id):
        shutil.rmtree(root / session_id, ignore_errors=True)


class Checkpoints:
    """A session's checkpoints under `root/<session id>`; one per live session. Its
    manifests are read, changed and written under one lock, so calls that overlap keep
    each other's records."""

    def __init__(self, root: Path, session_id: str, limits: CheckpointLimits) -> None:
        if not plain_name(session_id):
            raise ValueError(f"not a session id to name a directory by: {session_id!r}")
        self.dir = root / session_id
        self.limits = limits
        self.lock = threading.Lock()
        self._stored_bytes: int | None = None  # the session's blobs, counted once

    def manifest_path(self, turn: int) -> Path:
        return self.dir / f"{MANIFEST_PREFIX}{turn}.json"

    def read(self, turn: int) -> dict[str, FileRecord]:
        """A turn's records by relative path ({} when it changed nothing)."""
        try:
            data = json.loads(self.manifest_path(turn).read_text("utf-8"))
        except FileNotFoundError:
            return {}
        files = data.get("files") if isinstance(data, dict) else None
        if not isinstance(files, dict):
            raise ValueError(f"checkpoint of turn {turn} is not a manifest")
        return {rel: FileRecord.from_json(rec) for rel, rec in files.items()}

    def notes(self, turn: int) -> list[str]:
        """What a turn's checkpoint could not follow (a shell scan over its bound)."""
        with contextlib.suppress(FileNotFoundError, ValueError):
            notes = json.loads(self.manifest_path(turn).read_text("utf-8")).get("notes")
            return [n for n in notes if isinstance(n, str)] if isinstance(notes, list) else []
        return []

    def write(self, turn: int, records: dict[str, FileRecord], notes: Sequence[str] = ()) -> None:
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        body = {
            "turn": turn,
            "files": {rel: r.to_json() for rel, r in records.items()},
            "notes": sorted(set(notes)),
        }
        tmp = self.manifest_path(turn).with_suffix(".tmp")
        tmp.write_text(json.dumps(body, indent=1), "utf-8")
        os.replace(tmp, self.manifest_path(turn))

    def turns(self) -> list[int]:
        """The turns that have a checkpoint, in order."""
        if not self.dir.is_dir():
            return []
        found = []
        for name in os.listdir(self.dir):
            number = name.removeprefix(MANIFEST_PREFIX).removesuffix(".json")
            if name.startswith(MANIFEST_PREFIX) and name.endswith(".json") and number.isdigit():
                found.append(int(number))
        return sorted(found)

    def drop_from(self, turn: int) -> None:
        """Forget the checkpoints of turns `turn` and later (their turns are gone)."""
        for n in self.turns():
            if n >= turn:
                self.manifest_path(n).unlink(missing_ok=True)

    def blob(self, sha: str) -> bytes:
        """Kept bytes by hash, checked against it (a tampered blob is refused)."""
        if not is_sha(sha):
            raise ValueError(f"not a hash: {sha!r}")
        data = (self.dir / "blobs" / sha).read_bytes()
        if hashlib.sha256(data).hexdigest() != sha:
            raise ValueError(f"kept bytes {sha[:12]}… do not match their hash")
        return data

    def keep(self, data: bytes, turn_used: int) -> tuple[str | None, str]:
        """Keep `data` if the bounds allow: (its hash, "") or (None, why not)."""
        size = len(data)
        if turn_used + size > self.limits.turn_bytes:
            return None, f"over turn_bytes ({self.limits.turn_bytes} bytes kept per turn)"
        if self.stored_bytes() + size > self.limits.session_bytes:
            return None, f"over session_bytes ({self.limits.session_bytes} bytes per session)"
        sha = hashlib.sha256(data).hexdigest()
        path = self.dir / "blobs" / sha
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = path.with_suffix(".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
            self._stored_bytes = self.stored_bytes() + size
        return sha, ""

    def stored_bytes(self) -> int:
        if self._stored_bytes is None:
            blobs = self.dir / "blobs"
            entries = os.scandir(blobs) if blobs.is_dir() else contextlib.nullcontext([])
            with entries as it:
                self._stored_bytes = sum(e.stat().st_size for e in it)
        return self._stored_bytes

    async def watch(self, turn: int, cwd: Path, kind: str, paths: Sequence[Path]) -> Watch | None:
        """Start watching one tool call (None: its kind changes no file we track)."""
        if not self.limits.enabled or (kind not in WATCHED_KINDS and kind != "execute"):
            return None
        watch = Watch(self, turn, cwd, kind, tuple(paths))
        try:
            await asyncio.to_thread(watch.before)
        except (OSError, ValueError) as exc:  # a checkpoint never stops a tool call
            log.warning("no checkpoint for turn %d: %s", turn, exc)
            return None
        return watch


@dataclass(slots=True)
class Watch:
    """One tool call's changes, recorded into its turn's checkpoint."""

    owner: Checkpoints
    turn: int
    cwd: Path
    kind: str
    paths: tuple[Path, ...]
    records: dict[str, FileRecord] = field(default_factory=dict)
    scan: dict[str, tuple[int, int]] | None = None  # shell: rel -> (size, mtime_ns)
    notes: list[str] = field(default_factory=list)

    async def after(self) -> None:
        try:
            await asyncio.to_thread(self._locked, self._after)
        except (OSError, ValueError) as exc:  # the call's result stands; its record is lost
            log.warning("checkpoint of turn %d not updated: %s", self.turn, exc)

    def _locked(self, step: Callable[[], None]) -> None:
        with self.owner.lock:
            step()

    def before(self) -> None:
        with self.owner.lock:
            self._before()

    def _before(self) -> None:
        self.records = self.owner.read(self.turn)
        self.notes = self.owner.notes(self.turn)
        if self.kind == "execute":
            scan, note = _scan(self.cwd, self.owner.limits)
            self.scan = None if note else scan
            if note:
                self.notes.append(f"shell commands' changes not followed: {note}")
            return
        for path in self.paths:
            rel = self._rel(path)
            if rel is not None and rel not in self.records:
                self.records[rel] = self._prior(path)
        self.owner.write(self.turn, self.records, self.notes)

    def _after(self) -> None:
        current = self.owner.read(self.turn)  # another call may have written meanwhile
        self.records = {**current, **{r: v for r, v in self.records.items() if r not in current}}
        self.notes = sorted(set(self.owner.notes(self.turn)) | set(self.notes))
        if self.kind == "execute":
            self._after_shell()
        for rel, record in self.records.items():
            if self._touched(rel):
                record.after = _sha_or_state(self.cwd / rel)
        self.owner.write(self.turn, self.records, self.notes)

    def _touched(self, rel: str) -> bool:
        return self.kind == "execute" or any(self._rel(p) == rel for p in self.paths)

    def _after_shell(self) -> None:
        if self.scan is None:  # over the scan bound: said once in the checkpoint
            return
        now, note = _scan(self.cwd, self.owner.limits)
        if note:
            self.notes.append(f"shell commands' changes not followed: {note}")
            return
        changed = [
            rel for rel in self.scan.keys() | now.keys() if self.scan.get(rel) != now.get(rel)
        ]
        new = [rel for rel in sorted(changed) if rel not in self.records]
        room = max(0, self.owner.limits.turn_files - len(self.records))
        if len(new) > room:
            limit = self.owner.limits.turn_files
            self.notes.append(
                f"{len(new) - room} more changed files not recorded (turn_files {limit})"
            )
        for rel in new[:room]:
            if rel not in self.scan:
                self.records[rel] = FileRecord(ABSENT)  # it appeared: restorable by removal
            else:
                reason = "changed by a shell command; its bytes before were not kept"
                self.records[rel] = FileRecord(None, reason=reason)

    def _rel(self, path: Path) -> str | None:
        try:
            return path.relative_to(self.cwd).as_posix()
        except ValueError:  # outside the cwd (an additional directory): not checkpointed
            return None

    def _prior(self, path: Path) -> FileRecord:
        if len(self.records) >= self.owner.limits.turn_files:
            return FileRecord(None, reason=f"over turn_files ({self.owner.limits.turn_files})")
        try:
            st = beneath.lstat(path)
        except FileNotFoundError:
            return FileRecord(ABSENT)
        except OSError as exc:
            return FileRecord(None, reason=f"unreadable: {exc.strerror or exc}")
        if not stat.S_ISREG(st.st_mode):
            return FileRecord(None, reason="not a regular file (a symlink or a directory)")
        used = sum(_size(self.owner, r.prior) for r in self.records.values())
        if used + st.st_size > self.owner.limits.turn_bytes:
            limit = self.owner.limits.turn_bytes
            return FileRecord(None, reason=f"over turn_bytes ({limit} bytes kept per turn)")
        sha, why = self.owner.keep(beneath.read_bytes(path), used)
        return FileRecord(sha, reason=why)


def _size(owner: Checkpoints, prior: str | None) -> int:
    if not is_sha(prior):
        return 0
    with contextlib.suppress(OSError):
        return (owner.dir / "blobs" / str(prior)).stat().st_size
    return 0


def _sha_or_state(path: Path) -> str | None:
    try:
        state = file_state(path)
    except (OSError, PathError):
        return None
    return state if state == ABSENT or is_sha(state) else None


def _scan(cwd: Path, limits: CheckpointLimits) -> tuple[dict[str, tuple[int, int]], str]:
    """Every regular file under `cwd` (not in `limits.skip_dirs`, symlinks not followed)
    with its size and mtime; ({}, why) past `limits.scan_max_files`."""
    found: dict[str, tuple[int, int]] = {}
    skip = frozenset(limits.skip_dirs)
    stack = [cwd]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in skip:
                    stack.append(Path(entry.path))
            elif entry.is_file(follow_symlinks=False):
                st = entry.stat(follow_symlinks=False)
                found[Path(entry.path).relative_to(cwd).as_posix()] = (st.st_size, st.st_mtime_ns)
                if len(found) > limits.scan_max_files:
                    limit = limits.scan_max_files
                    return {}, f"the workspace has over scan_max_files ({limit}) files"
    return found, ""


def tool_paths(accesses: Sequence[Any], cwd: Path) -> list[Path]:
    """The absolute paths a file tool's accesses name (a bad one is left to the tool)."""
    paths = []
    for access in accesses:
        if getattr(access, "op", "read") == "read" or not access.path:
            continue
        with contextlib.suppress(PathError, OSError, ValueError):
            paths.append(resolve(access.path, cwd, access.op))
    return paths
