"""Rewind a session of an agent that serves `_session/rewind` (ours: server/rewind.py).

`Session.rewind(before_turn, mode=..., dry_run=..., force=...)` and
`Session.rewind_points()` call the agent and read its answer into the types below,
leniently (a field missing or of the wrong type reads as its default), as the client
reads every peer's answers. An agent without the methods answers -32601, raised as
`AgentError` like any error reply.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "REWIND_METHOD",
    "REWIND_POINTS_METHOD",
    "FileChange",
    "RewindMode",
    "RewindPoint",
    "RewindResult",
    "read_points",
    "read_result",
]

REWIND_METHOD = "_session/rewind"
REWIND_POINTS_METHOD = "_session/rewind_points"
RewindMode = Literal["files", "conversation", "both"]


@dataclass(frozen=True, slots=True)
class RewindPoint:
    """A stored turn a rewind may go back before: its index, prompt, files it changed."""

    index: int
    text: str
    files: int = 0


@dataclass(frozen=True, slots=True)
class FileChange:
    """What a rewind does (or would do) to one file: `restore`, `delete`, `unchanged`,
    `conflict` (changed outside the agent: only with force), `not_restorable`, `refused`."""

    path: str
    action: str
    reason: str = ""


@dataclass(frozen=True, slots=True)
class RewindResult:
    dry_run: bool
    can_rewind: bool = True  # False: a conflict, nothing was done
    error: str = ""
    changes: tuple[FileChange, ...] = ()
    files_changed: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    conversation_rewound: bool = False
    messages_dropped: int = 0

    @property
    def conflicts(self) -> tuple[FileChange, ...]:
        return tuple(c for c in self.changes if c.action == "conflict")


def read_points(answer: Any) -> list[RewindPoint]:
    points = answer.get("points") if isinstance(answer, dict) else None
    found = []
    for p in points if isinstance(points, list) else ():
        if isinstance(p, dict) and _int(p.get("index")) is not None:
            found.append(RewindPoint(p["index"], _str(p.get("text")), _int(p.get("files")) or 0))
    return found


def read_result(answer: Any) -> RewindResult:
    answer = answer if isinstance(answer, dict) else {}
    files = answer.get("files") if isinstance(answer.get("files"), dict) else {}
    talk = answer.get("conversation") if isinstance(answer.get("conversation"), dict) else {}
    raw_changes = files.get("changes") if isinstance(files.get("changes"), list) else []
    changes = tuple(
        FileChange(_str(c.get("path")), _str(c.get("action")), _str(c.get("reason")))
        for c in raw_changes
        if isinstance(c, dict)
    )
    return RewindResult(
        dry_run=answer.get("dryRun") is True,
        can_rewind=files.get("canRewind") is not False,
        error=_str(files.get("error")),
        changes=changes,
        files_changed=_strs(files.get("filesChanged")),
        notes=_strs(files.get("notes")),
        conversation_rewound=talk.get("rewound") is True,
        messages_dropped=_int(talk.get("messagesDropped")) or 0,
    )


def _str(value: object) -> str:
    return value if isinstance(value, str) else ""


def _strs(value: object) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
