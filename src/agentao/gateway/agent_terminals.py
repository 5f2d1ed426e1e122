"""A v2 agent's own terminals in the gateway's log, which every face reads in v1's shape.

Theory of operation. An ACP v2 agent may run a tool call's command in a terminal of its
own: `terminal_update` (command, cwd, `capabilities.cancel`, later `exitStatus`) and
`terminal_output_chunk`s (base64 bytes) while it runs, the tool call's content naming the
terminal (`{type: "terminal", terminalId}`). v1 has none of that: a v1 reader (OpenAI's
x_acp, the task stream, the web UI, a remote v1 client) knows a tool call by its content.
So the client library folds the terminal (client/view.py: `terminals`, `terminal_calls`),
and the gateway logs (`agent_protocol.logged_update`):

terminal_output_chunk   a v1 `tool_call_update` of the call naming the terminal, its
                        content the terminal and the output so far as text: the first
                        `TERMINAL_LOG_BYTES`, in the first `TERMINAL_LOG_UPDATES` chunks;
                        the update that passes either bound says the rest comes when the
                        command ends (the call's final content has it: our agent sends the
                        output it kept), and later ones carry no content
terminal_update         the same update without content (its exit says nothing to v1)
the tool call's own     as before, and while its terminal runs the terminal's state as a
                        v2 `terminal_update` to send v2 readers first
A terminal no call names yet (its first update comes before the call's): not logged; its
state goes with the call's update that names it.

Each logged update keeps the agent's v2 updates under `_meta[meta.V2_TERMINAL]`, so the
bridge sends a v2 reader the real `terminal_update`s and `terminal_output_chunk`s, and
the terminal (not its name in words) in the tool call's content (gateway/remote/bridge.py:
`v2_terminals`). The bounds are read from the terminal as the client has folded it so
far (a burst of chunks is logged after it is folded, so a chunk's text may hold the
next ones' too, and the cut may be said twice, or not at all when a burst passes a bound
at once). Bounded: what a command logs as text is at most
(TERMINAL_LOG_UPDATES + 1) x TERMINAL_LOG_BYTES; the chunks themselves are bounded by the agent
(ours: `ShellLimits.terminal_stream_limit`), and the client keeps a terminal's last
`TERMINAL_OUTPUT_LIMIT` bytes.
"""

from __future__ import annotations

from typing import Any

import msgspec

from agentao.client import Session, Update
from agentao.client.view import TERMINAL_KINDS, TerminalView
from agentao.protocol import meta, schema
from agentao.protocol.decode import decode_lenient, raw_of
from agentao.protocol.v2.from_v1 import text_content

TERMINAL_LOG_BYTES = 8 * 1024  # of a command's output logged live as its tool call's text
TERMINAL_LOG_UPDATES = 100  # chunks of a command logged with that text; later ones without
CUT_NOTE = "\n… (live output cut here: the whole comes when the command ends)"


def terminal_logged(session: Session, update: Update) -> Update | None:
    """A v2 terminal's update as the v1 `tool_call_update` the log keeps (see the module
    docstring), or None while no tool call names the terminal."""
    view = session.view
    terminal_id = update.value.terminal_id
    call_id = view.terminal_calls.get(terminal_id)
    terminal = view.terminals.get(terminal_id)
    if call_id is None or terminal is None:
        return None
    wire: dict[str, Any] = {"sessionUpdate": "tool_call_update", "toolCallId": call_id}
    if update.kind == "terminal_output_chunk" and (text := live_text(terminal)) is not None:
        wire["content"] = [{"type": "terminal", "terminalId": terminal_id}, text_content(text)]
    wire["_meta"] = {meta.V2_TERMINAL: {"instead": [update.raw], "terminals": [terminal_id]}}
    value = decode_lenient(schema.SessionUpdate, wire)
    logged = raw_of(wire)
    return msgspec.structs.replace(update, kind="tool_call_update", value=value, wire=logged)


def live_text(terminal: TerminalView) -> str | None:
    """The output so far while within the bounds; cut (said so) by the chunk that passes
    one; None after."""
    within = terminal.chunks <= TERMINAL_LOG_UPDATES and terminal.received <= TERMINAL_LOG_BYTES
    if within:
        return terminal.text
    last_size = terminal.received - terminal.last_chunk
    if terminal.chunks - 1 <= TERMINAL_LOG_UPDATES and last_size <= TERMINAL_LOG_BYTES:
        head = bytes(terminal.output[:TERMINAL_LOG_BYTES]).decode("utf-8", "replace")
        return head + CUT_NOTE
    return None


def own_terminals(session: Session, raw: dict[str, Any]) -> dict[str, Any] | None:
    """For a tool call's own update that names the agent's terminals: what the bridge
    needs of them (meta.V2_TERMINAL), the state of each still running to send first."""
    content = raw.get("content")
    blocks = content if isinstance(content, list) else ()
    ids = [
        b.get("terminalId") for b in blocks if isinstance(b, dict) and b.get("type") == "terminal"
    ]
    known = session.view.terminals
    terminals = [known[i] for i in ids if isinstance(i, str) and i in known]
    if not terminals:
        return None
    before = [terminal_state(t) for t in terminals if not t.exited]
    return {"terminals": [t.terminal_id for t in terminals], "before": before}


def terminal_state(terminal: TerminalView) -> dict[str, Any]:
    """A running terminal's state as one v2 `terminal_update` (its output comes as chunks)."""
    update: dict[str, Any] = {
        "sessionUpdate": "terminal_update",
        "terminalId": terminal.terminal_id,
    }
    if terminal.command is not None:
        update["command"] = terminal.command
    if terminal.cwd is not None:
        update["cwd"] = terminal.cwd
    if terminal.cancellable:
        update["capabilities"] = {"cancel": {}}
    return update


__all__ = [
    "CUT_NOTE",
    "TERMINAL_KINDS",
    "TERMINAL_LOG_BYTES",
    "TERMINAL_LOG_UPDATES",
    "live_text",
    "own_terminals",
    "terminal_logged",
    "terminal_state",
]
