"""Rewind the workspace's files to before a turn, from the checkpoints (checkpoints.py).

`plan(checkpoints, cwd, before)` says what a restore would do to each file the turns
from `before` on changed: its state before the first of them (`prior`) against what
is on disk, and against what the agent last left there (`after`, the last of them):

    restore       the disk holds what the agent left: the prior bytes go back
    delete        likewise, and the file did not exist before: it is removed
    unchanged     the disk already holds the prior state
    conflict      the disk differs from what the agent left (changed outside the agent
                  since, or unknown): restored only with `force`
    not_restorable  the prior bytes were never kept (`reason` says why)

`restore(plan, force)` does it. Every path comes from a manifest on disk, so it is
checked again before anything is written: relative, no `..` (`checked_relative`), and
written through descriptors (`agentao/beneath.py`), so a parent directory swapped for a
symlink out of the workspace is refused, never followed, and a symlink at the name is
replaced, never written through. Kept bytes are checked against their hash.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentao import beneath
from agentao.agent.checkpoints import ABSENT, Checkpoints, FileRecord, checked_relative, file_state

__all__ = ["FileChange", "RewindPlan", "plan", "restore"]

Action = Literal["restore", "delete", "unchanged", "conflict", "not_restorable", "refused"]


@dataclass(frozen=True, slots=True)
class FileChange:
    path: str  # relative to the session's cwd
    action: Action
    reason: str = ""
    prior: str | None = None  # what it goes back to: a hash, ABSENT, or None

    def to_json(self) -> dict[str, str]:
        data = {"path": self.path, "action": self.action}
        if self.reason:
            data["reason"] = self.reason
        return data


@dataclass(frozen=True, slots=True)
class RewindPlan:
    changes: tuple[FileChange, ...]
    notes: tuple[str, ...] = ()

    @property
    def conflicts(self) -> tuple[FileChange, ...]:
        return tuple(c for c in self.changes if c.action in ("conflict", "refused"))


def plan(checkpoints: Checkpoints, cwd: Path, before: int) -> RewindPlan:
    """What restoring the files to before turn `before` would do."""
    first: dict[str, FileRecord] = {}
    last: dict[str, FileRecord] = {}
    notes: list[str] = []
    for turn in checkpoints.turns():
        if turn < before:
            continue
        notes += [f"turn {turn}: {n}" for n in checkpoints.notes(turn)]
        for rel, record in checkpoints.read(turn).items():
            first.setdefault(rel, record)
            last[rel] = record
    changes = tuple(_change(cwd, rel, first[rel], last[rel]) for rel in sorted(first))
    return RewindPlan(changes, tuple(notes))


def _change(cwd: Path, rel: str, first: FileRecord, last: FileRecord) -> FileChange:
    try:
        path = cwd / checked_relative(rel)
        now = file_state(path)
    except (ValueError, OSError) as exc:
        return FileChange(rel, "refused", f"never written: {exc}")
    if first.prior is None:
        return FileChange(rel, "not_restorable", first.reason or "its bytes before were not kept")
    if now == first.prior:
        return FileChange(rel, "unchanged", prior=first.prior)
    action: Action = "delete" if first.prior == ABSENT else "restore"
    if last.after is None or now != last.after:
        why = "changed outside the agent since it last wrote it"
        if now in ("link", "dir", "other"):
            why = f"now a {now}, not what the agent left"
        return FileChange(
            rel, "conflict", f"{why} (would {action}; force to overwrite)", first.prior
        )
    return FileChange(rel, action, prior=first.prior)


def restore(checkpoints: Checkpoints, cwd: Path, rewind: RewindPlan, force: bool) -> RewindPlan:
    """Carry out `rewind` (nothing at all when it has conflicts and not `force`);
    the changes as done, a refused write said so."""
    if rewind.conflicts and not force:
        return rewind
    done = [_apply(checkpoints, cwd, change) for change in rewind.changes]
    return RewindPlan(tuple(done), rewind.notes)


def _apply(checkpoints: Checkpoints, cwd: Path, change: FileChange) -> FileChange:
    if change.action in ("unchanged", "not_restorable", "refused") or change.prior is None:
        return change
    try:
        path = cwd / checked_relative(change.path)
        if change.prior == ABSENT:
            beneath.unlink(path)
            return FileChange(change.path, "delete", change.reason)
        beneath.write_atomic(path, checkpoints.blob(change.prior))
    except FileNotFoundError:
        return FileChange(change.path, "delete", change.reason)
    except (OSError, ValueError) as exc:
        return FileChange(change.path, "refused", f"not written: {exc}")
    return FileChange(change.path, "restore", change.reason)
