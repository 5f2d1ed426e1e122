"""v2's `session/fork` (unstable): a new session with the stored history of another.

The source is read from the store, as `session/resume` reads it: every turn committed
so far (a turn still running on the source is not in it: only a finished turn is
history). The fork gets a new id and the source's state (mode, model, plan, the
"allow always" grants of the same workspace), every turn copied into the store under
its own id, and opens live as a resumed session does (the process's ceiling holds its
mode). The source is untouched; the two go their own ways from here.

The fork's `cwd` must be the source's (its history's paths are there);
`additionalDirectories`, when given, is the fork's whole list (the schema: omitted or
empty activates none). Its MCP servers are the request's.

Fork at an earlier user message (edit and resend): `_meta["agentao.cn/beforeTurn"]` =
N, the 0-based index of a stored turn (one user message and what answered it). The
fork then holds exactly turns 0..N-1, and its plan is the last one those turns set
(none if they set none); N = the number of turns is the whole history, as without the
key. Turns are named by index, not by a v2 `messageId`: a user message's id is minted
per prompt and never stored, while the turn index is what every reader of the store
(the gateway counts its conversation's tasks) can name. Anything but an integer in
0..turns is -32602 with `data.field` naming the key. `initialize` advertises the key
on `capabilities.session.fork._meta` (server/capabilities.py).

A caller that counts turns by its own records may count one the agent never stored (a
turn its process died in: only a finished turn is history), so its index can run ahead
of ours. `_meta["agentao.cn/beforePrompt"]`, that turn's prompt, makes the index an upper
bound: the fork is before the nearest turn at or before it whose prompt is that text
(compared on its first `PROMPT_MATCH_CHARS`, what the gateway keeps of a prompt, stripped);
none is -32602 with `data.reason` "no_such_turn".
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentao.agent import events as ev
from agentao.agent.session import AgentSession, TurnRecord
from agentao.protocol.connection import params_of
from agentao.protocol.errors import InvalidParams
from agentao.server.capabilities import BEFORE_PROMPT_KEY, BEFORE_TURN_KEY
from agentao.server.client_prompt import keep_client_prompt, read_client_prompt
from agentao.server.mcp_config import checked_mcp_servers, fingerprint
from agentao.server.params import directories, directory

if TYPE_CHECKING:
    from agentao.protocol.v2 import schema as v2
    from agentao.server.live import LiveSession

__all__ = ["BEFORE_TURN_KEY", "PROMPT_MATCH_CHARS", "fork_session", "forked", "plan_after"]

PROMPT_MATCH_CHARS = 2000  # how much of a prompt identifies its turn (the gateway keeps 2000)


async def fork_session(
    agent: Any, params: v2.ForkSessionRequest, message: dict[str, Any]
) -> LiveSession:
    """The fork of `params.session_id`, stored and live on `agent` (the AcpAgent)."""
    cwd = directory(params.cwd, "cwd")
    raw_servers = params_of(message).get("mcpServers")
    client_prompt = read_client_prompt(params_of(message).get("systemPrompt"))
    servers = await checked_mcp_servers(raw_servers, str(cwd))
    source, grants = await agent._load(params.session_id)
    if str(source.cwd) != str(cwd):
        raise InvalidParams(
            f"Invalid params: cwd must match the forked session's cwd ({source.cwd})",
            {"field": "cwd"},
        )
    copy = forked(source, _fork_point(params.meta, source))
    copy.additional_dirs = directories(params.additional_directories, "additionalDirectories")
    copy.meta["mcp_fingerprint"] = fingerprint(raw_servers)
    keep_client_prompt(copy, client_prompt)  # none: the source's, copied with its meta
    await agent._probe_sandbox()
    live = await agent._open(copy, grants, servers)
    await agent.archive.create_with_turns(copy, live.engine)
    agent.sessions.add(live)
    return live


def forked(source: AgentSession, before: int | None = None) -> AgentSession:
    """A copy of `source` under a new id, created now, its turns and state the same; with
    `before`, only the turns before that index, and the plan they left."""
    now = time.time()
    data = {**source.to_dict(), "id": str(uuid.uuid4()), "created_at": now, "updated_at": now}
    if before is not None and before < len(source.turns):
        data["turns"] = data["turns"][:before]  # the model's context is built from these
        data["plan"] = []
        copy = AgentSession.from_dict(data)
        copy.plan = plan_after(copy.turns)
        return copy
    return AgentSession.from_dict(data)


def _fork_point(meta: dict[str, Any] | None, source: AgentSession) -> int | None:
    """The turn index the fork ends before (None: after the last), found by the prompt
    when the request names one."""
    before = _before_turn(meta, len(source.turns))
    if before is None or BEFORE_PROMPT_KEY not in (meta or {}):
        return before
    prompt = (meta or {})[BEFORE_PROMPT_KEY]
    if not isinstance(prompt, str):
        raise InvalidParams(
            f"Invalid params: _meta.{BEFORE_PROMPT_KEY} must be a string",
            {"field": f"_meta.{BEFORE_PROMPT_KEY}"},
        )
    wanted = prompt.strip()[:PROMPT_MATCH_CHARS]
    for index in range(min(before, len(source.turns) - 1), -1, -1):
        if source.turns[index].prompt.strip()[:PROMPT_MATCH_CHARS] == wanted:
            return index
    raise InvalidParams(
        f"Invalid params: no stored turn at or before {before} has that prompt",
        {"field": f"_meta.{BEFORE_PROMPT_KEY}", "reason": "no_such_turn"},
    )


def _before_turn(meta: dict[str, Any] | None, turns: int) -> int | None:
    """The turn index the request forks before; None when it names none."""
    if not meta or BEFORE_TURN_KEY not in meta:
        return None
    value = meta[BEFORE_TURN_KEY]
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= turns:
        raise InvalidParams(
            f"Invalid params: _meta.{BEFORE_TURN_KEY} must be a turn index from 0 to {turns}",
            {"field": f"_meta.{BEFORE_TURN_KEY}"},
        )
    return value


def plan_after(turns: Sequence[TurnRecord]) -> tuple[ev.PlanEntry, ...]:
    """The plan these turns last set (a PlanChanged event), else none."""
    for turn in reversed(turns):
        for event in reversed(turn.events):
            if isinstance(event, ev.PlanChanged):
                return event.entries
    return ()
