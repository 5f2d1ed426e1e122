"""Where a conversation's agent session works: its working directory, chosen and checked.

    GET /v1/agents/{name}/workdirs   {agent, cwd, roots}: the agent's configured cwd and
                                     every root a session of it may work in

A new conversation of the task stream (`POST /v1/tasks` with `cwd`, the web UI's folder
picker) may open its session in any directory inside the agent's roots: its configured
`cwd` and its `[agents.NAME.sandbox] write` paths, all its confined process can write
(remote ACP sessions are held to the same roots, `remote/limits.py`). The path must be
absolute and is resolved first, so a `..` or a symlink that leads out is refused like a
path outside: a 400 whose code says why (so is a NUL, or a path past PATH_MAX). The agent is given the resolved path, the one
that was checked. A conversation keeps its directory: naming another on a later turn is
a 400 too.
"""

from __future__ import annotations

import os
from typing import Any

from fastapi import APIRouter, Request

from agentao.gateway.config import AgentSpec
from agentao.gateway.errors import BadRequest
from agentao.gateway.pool import SessionParams
from agentao.gateway.roots import (
    NOT_A_PATH,
    NOT_ABSOLUTE,
    OUTSIDE,
    PathRefused,
    agent_roots,
    resolve_within,
)
from agentao.gateway.service import Gateway
from agentao.store.gateway_records import Conversation

router = APIRouter()

# Error codes (`error.code`) of a refused `cwd`.
CWD_NOT_ABSOLUTE = "cwd_not_absolute"
CWD_OUTSIDE_ROOTS = "cwd_outside_roots"
CWD_NOT_A_DIRECTORY = "cwd_not_a_directory"
CWD_FIXED = "cwd_fixed"
CWD_INVALID = "cwd_invalid"
_CODES = {NOT_A_PATH: CWD_INVALID, NOT_ABSOLUTE: CWD_NOT_ABSOLUTE, OUTSIDE: CWD_OUTSIDE_ROOTS}


def checked_cwd(spec: AgentSpec, path: str) -> str:
    """`path` resolved, if it is an absolute path to a directory inside `spec`'s roots;
    else a 400 naming `cwd` with a code saying why."""
    try:
        real = resolve_within(spec, "cwd", path)
    except PathRefused as refused:
        raise BadRequest(str(refused), param="cwd", code=_CODES[refused.reason]) from None
    if not os.path.isdir(real):
        raise BadRequest(f"cwd {path} is not a directory", param="cwd", code=CWD_NOT_A_DIRECTORY)
    return real


def new_session_params(spec: AgentSpec, cwd: str | None) -> dict[str, Any] | None:
    """A new conversation's stored session params for `cwd` (None: the agent's own)."""
    return SessionParams(checked_cwd(spec, cwd)).stored() if cwd else None


def check_kept(spec: AgentSpec, record: Conversation, cwd: str | None) -> None:
    """A later turn may repeat its conversation's directory, never name another."""
    if cwd and checked_cwd(spec, cwd) != session_cwd(spec, record):
        raise BadRequest(
            "a conversation keeps the directory it started in: start a new one to work elsewhere",
            param="cwd",
            code=CWD_FIXED,
        )


def session_cwd(spec: AgentSpec, record: Conversation) -> str:
    """Where the conversation's session works (resolved)."""
    return SessionParams.of(record.session_params).cwd or os.path.realpath(spec.cwd)


@router.get("/v1/agents/{name}/workdirs")
async def agent_workdirs(name: str, request: Request) -> Any:
    gw: Gateway = request.app.state.gateway
    choice = gw.resolve_model(gw.principal(request), name, "name")
    return listing(gw.pools[choice.agent].spec)


def listing(spec: AgentSpec) -> dict[str, Any]:
    """What `GET /v1/agents/{name}/workdirs` answers (a few resolved config paths)."""
    return {"agent": spec.name, "cwd": os.path.realpath(spec.cwd), "roots": agent_roots(spec)}


__all__ = [
    "CWD_FIXED",
    "CWD_INVALID",
    "CWD_NOT_ABSOLUTE",
    "CWD_NOT_A_DIRECTORY",
    "CWD_OUTSIDE_ROOTS",
    "check_kept",
    "checked_cwd",
    "listing",
    "new_session_params",
    "router",
    "session_cwd",
]
