"""`_session/rewind` and `_session/rewind_points`: back to before an earlier user message.

The shape is claude-agent-acp's proposal (its PR 966: `_session/rewind {sessionId,
messageId, mode?, dryRun?}`), with our own way to name the point, since a v2 `messageId`
is minted per prompt and never stored (server/fork.py says the same):

    _session/rewind_points {sessionId}
      -> {points: [{index, text, files}]}     one per stored turn (user message);
                                              `files`: how many files it changed
    _session/rewind {sessionId, beforeTurn, mode?, dryRun?, force?}
      -> {dryRun, files?: {canRewind, error?, changes: [{path, action, reason?}],
                           filesChanged, notes},
          conversation?: {rewound, messagesDropped}}

`beforeTurn` is the 0-based index of a stored turn: afterwards the session is as it was
before that turn's prompt. `mode` is "files" (the default, as claude-agent-acp's),
"conversation" or "both". A file changed outside the agent since the agent last wrote
it is a `conflict`: the dry run lists it with why, and the rewind does nothing at all
(`canRewind: false`, the conversation kept too) unless `force` is true. What the file
actions mean is agent/rewind.py's docstring. A rewound conversation drops the later
turns from the store and their checkpoints; files changed by a files-only rewind keep
their turns' checkpoints (a second rewind then sees them as changed outside).

Served on v1 and v2 alike, and named with the other vendor methods in `initialize`'s
`_meta["_agentao.cn/extensions"]`. A session with a turn running refuses (-32600,
`data.reason` "busy"), and the rewind holds the session as a turn would, so no prompt
starts while files are restored. A session whose mode writes nothing (read-only, plan:
a read-only key's ceiling puts its sessions there) may ask for a dry run, but a rewind
of its files is -32600 with `data.reason` "read_only": restoring is writing.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from agentao.agent.rewind import RewindPlan, plan, restore
from agentao.modes import MODE_RANK
from agentao.protocol.errors import InvalidParams, InvalidRequest
from agentao.server.fork import plan_after
from agentao.server.live import LiveSession, SessionRegistry

__all__ = [
    "MODES",
    "REWIND_METHOD",
    "REWIND_POINTS_METHOD",
    "handlers",
    "rewind",
    "rewind_points",
]

REWIND_METHOD = "_session/rewind"
REWIND_POINTS_METHOD = "_session/rewind_points"
MODES = ("files", "conversation", "both")
_FIELDS = frozenset({"sessionId", "beforeTurn", "mode", "dryRun", "force", "_meta"})


def handlers(sessions: SessionRegistry) -> dict[str, Any]:
    """The two methods, by name, for an agent's `extensions` (v1 and v2)."""
    return {
        REWIND_METHOD: functools.partial(rewind, sessions),
        REWIND_POINTS_METHOD: functools.partial(rewind_points, sessions),
    }


async def rewind_points(sessions: SessionRegistry, params: Any) -> dict[str, Any]:
    live = sessions.get(_session_id(params))
    checkpoints = live.checkpoints
    points = []
    for index, turn in enumerate(live.agent.turns):
        files = len(checkpoints.read(index)) if checkpoints is not None else 0
        points.append({"index": index, "text": turn.prompt, "files": files})
    return {"points": points}


async def rewind(sessions: SessionRegistry, params: Any) -> dict[str, Any]:
    unknown = set(params) - _FIELDS if isinstance(params, dict) else set()
    if unknown:
        field = sorted(unknown)[0]
        raise InvalidParams(f"Invalid params: unknown field {field}", {"field": field})
    live = sessions.get(_session_id(params))
    before = _before_turn(params, len(live.agent.turns))
    mode = params.get("mode", "files")
    if mode not in MODES:
        raise InvalidParams(
            "Invalid params: mode must be files, conversation or both", {"field": "mode"}
        )
    dry_run, force = _flag(params, "dryRun"), _flag(params, "force")
    if not live.state.idle:
        raise InvalidRequest(
            "Invalid Request: a turn is running in this session; cancel it first",
            {"sessionId": live.id, "reason": "busy"},
        )
    if mode != "conversation" and not dry_run and MODE_RANK.get(live.agent.mode_id, 0) < 1:
        raise InvalidRequest(
            f"Invalid Request: a rewind writes files, and this session's mode "
            f"({live.agent.mode_id}) writes none",
            {"sessionId": live.id, "reason": "read_only"},
        )
    live.state.fire("prompt")  # held as a turn holds it: no prompt starts meanwhile
    try:
        return await _rewind(live, before, mode, dry_run, force)
    finally:
        if live.state.can("finish"):
            live.state.fire("finish")


async def _rewind(
    live: LiveSession, before: int, mode: str, dry_run: bool, force: bool
) -> dict[str, Any]:
    result: dict[str, Any] = {"dryRun": dry_run}
    files_ok = True
    if mode in ("files", "both"):
        files, files_ok = await _files(live, before, dry_run, force)
        result["files"] = files
    if mode in ("conversation", "both"):
        dropped = len(live.agent.turns) - before
        rewound = files_ok and not dry_run
        if rewound:
            await _drop_turns(live, before)
        result["conversation"] = {"rewound": rewound, "messagesDropped": dropped}
    return result


async def _files(
    live: LiveSession, before: int, dry_run: bool, force: bool
) -> tuple[dict[str, Any], bool]:
    """The files' half: its result, and whether the rewind may go on."""
    checkpoints = live.checkpoints
    if checkpoints is None:
        error = "this agent keeps no file checkpoints (AGENTAO_CHECKPOINTS=off)"
        return {"canRewind": False, "error": error, "changes": [], "filesChanged": []}, False
    cwd = live.agent.pin_roots().cwd
    try:
        wanted = await asyncio.to_thread(plan, checkpoints, cwd, before)
    except (OSError, ValueError) as exc:  # a manifest unreadable or tampered with
        error = f"a checkpoint cannot be read ({exc}); nothing was done"
        return {"canRewind": False, "error": error, "changes": [], "filesChanged": []}, False
    done = wanted if dry_run else await asyncio.to_thread(restore, checkpoints, cwd, wanted, force)
    blocked = bool(wanted.conflicts) and not force
    return _files_json(done, blocked), not blocked


def _files_json(done: RewindPlan, blocked: bool) -> dict[str, Any]:
    data: dict[str, Any] = {
        "canRewind": not blocked,
        "changes": [c.to_json() for c in done.changes],
        "filesChanged": [c.path for c in done.changes if c.action in ("restore", "delete")],
        "notes": list(done.notes),
    }
    if blocked:
        names = ", ".join(c.path for c in done.conflicts)
        data["error"] = f"changed outside the agent since: {names}; nothing was done (force)"
    return data


async def _drop_turns(live: LiveSession, before: int) -> None:
    """The conversation as it was before turn `before`: in memory, the store, and the
    checkpoints of the dropped turns."""
    live.agent.drop_turns_from(before, plan_after(live.agent.turns[:before]))
    await live.archive.truncate(live.agent, live.engine)
    if live.checkpoints is not None:
        await asyncio.to_thread(live.checkpoints.drop_from, before)


def _session_id(params: Any) -> str:
    session_id = params.get("sessionId") if isinstance(params, dict) else None
    if not isinstance(session_id, str) or not session_id:
        raise InvalidParams("Invalid params: sessionId must be a string", {"field": "sessionId"})
    return session_id


def _before_turn(params: dict[str, Any], turns: int) -> int:
    value = params.get("beforeTurn")
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < turns:
        raise InvalidParams(
            f"Invalid params: beforeTurn must be a stored turn's index, 0 to {turns - 1}",
            {"field": "beforeTurn"},
        )
    return value


def _flag(params: dict[str, Any], name: str) -> bool:
    value = params.get(name, False)
    if not isinstance(value, bool):
        raise InvalidParams(f"Invalid params: {name} must be a boolean", {"field": name})
    return value
