"""A scripted fake ACP agent: the prompt's first word picks a misbehaviour.

    python tests/fakes/fake_agents/scenario.py [--early-update] [--auth]

Prompts (text of the first content block):
    hello                 one chunk, end_turn
    flood N               N chunks "0".."N-1", end_turn
    dup-tool              tool_call, the same tool_call again, an update, end_turn
    late                  a chunk, the prompt result, then a late update (one write)
    unknown               an update of an unknown kind with extra fields, then a chunk
    perm KIND             tool_call of KIND, request_permission; reports the outcome
    perm-unannounced      request_permission for a tool call never announced
    perm-hang             request_permission, then waits for session/cancel
    hang                  a chunk, then waits for session/cancel; one more update; cancelled
    gate PATH             a chunk "working", then waits until the file PATH exists (the
                          test's release); a chunk "released", end_turn
    ignore-cancel         a chunk, then never answers (not even to session/cancel)
    crash                 a chunk, a line on stderr, exit code 3
    fs-read PATH [LINE LIMIT]   fs/read_text_file; reports the answer (or error) as text
    fs-write PATH TEXT    fs/write_text_file; reports the answer
    term CMD...           terminal/create + wait_for_exit + output + release; reports them
    run-unasked JSON      terminal/create with JSON's command/args/cwd, never asking
                          permission; reports the create reply (result or error) and, if
                          it ran, its exit status
    term-others           terminal/output, wait_for_exit, kill, release of an unknown id;
                          reports each error code
    caps                  reports the clientCapabilities it got in initialize
    echo ...              reports the prompt's content blocks as it received them
    ask QUESTION          _agentao.cn/ask_user; reports the answer
    ids                   its own requests use id 0 and a string id
    error                 answers the prompt with a JSON-RPC error -32603
    no-stop               answers the prompt without a stopReason (a protocol violation)
    usage                 end_turn with a root `usage` (the unstable schema's place)

Options: --refuse-v2 CODE answers an `initialize` asking for any version but 1 with the
JSON-RPC error CODE (a v1-only agent that refuses a v2 offer); --one-initialize answers a
second `initialize` with -32600 (an agent that takes one per connection); --v2-without-sessions
answers a version-2 `initialize` in v2's shape without `capabilities.session`; --v2 speaks v2 to
a client that asks for it (capabilities.session; a prompt is answered `{messageId}` and its
turn ends with a `state_update` idle; chunks carry a messageId); --early-update sends a session/update for the new session *before*
the session/new result; --auth answers session/new with -32000 until
`authenticate` was called; --endless-list lists its sessions (v1) a page at a time, every
page naming a next one (a client that follows cursors blindly never stops); --no-load
declares no `loadSession` (a v1 agent that cannot reopen a session).
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

from _wire import Wire, chunk, update

wire = Wire()
ARGS = sys.argv[1:]
state: dict[str, Any] = {"authed": False, "next_id": 100, "caps": None}


def next_id() -> int:
    state["next_id"] += 1
    return state["next_id"]


def on_initialize(msg: dict[str, Any]) -> None:
    if "--one-initialize" in ARGS and state.get("initialized"):
        wire.error(msg, -32600, "already initialized")
        return
    state["initialized"] = True
    if "--v2" in ARGS and msg.get("params", {}).get("protocolVersion") == 2:
        state["v2"] = True
        info = {"name": "fake", "version": "0"}
        wire.reply(msg, {"protocolVersion": 2, "info": info, "capabilities": {"session": {}}})
        return
    if "--v2-without-sessions" in ARGS and msg.get("params", {}).get("protocolVersion") == 2:
        info = {"name": "fake", "version": "0"}
        wire.reply(msg, {"protocolVersion": 2, "info": info, "capabilities": {}})
        return
    if "--refuse-v2" in ARGS and msg.get("params", {}).get("protocolVersion") != 1:
        code = int(ARGS[ARGS.index("--refuse-v2") + 1])
        wire.error(msg, code, "Unsupported protocol version")
        return
    state["caps"] = msg.get("params", {}).get("clientCapabilities")
    auth = [{"id": "key", "name": "API key"}] if "--auth" in ARGS else []
    sessions: dict[str, Any] = {"close": {}, **({"list": {}} if "--endless-list" in ARGS else {})}
    wire.reply(
        msg,
        {
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": "--no-load" not in ARGS,
                "sessionCapabilities": sessions,
            },
            "authMethods": auth,
            "agentInfo": {"name": "fake", "version": "0"},
            "_meta": {"extra": True},
        },
    )


def on_session_new(msg: dict[str, Any]) -> None:
    if "--auth" in ARGS and not state["authed"]:
        wire.error(msg, -32000, "Authentication required")
        return
    sid = str(uuid.uuid4())
    response = {"jsonrpc": "2.0", "id": msg["id"], "result": {"sessionId": sid}}
    if "--early-update" in ARGS:
        wire.send(chunk(sid, "early"), response)
    else:
        wire.send(response)


def wait_cancel(sid: str) -> None:
    """Block until session/cancel for `sid` (other messages are kept for later)."""
    while True:
        msg = wire._read_line()
        if msg is None:
            raise SystemExit(0)
        if msg.get("method") == "session/cancel":
            return
        wire.backlog.append(msg)


def tool_call(sid: str, tid: str, kind: str, **extra: Any) -> dict[str, Any]:
    body = {"sessionUpdate": "tool_call", "toolCallId": tid, "title": f"{kind} thing", "kind": kind}
    return update(sid, {**body, "status": "pending", **extra})


def permission(sid: str, tid: str, kind: str, request_id: Any = None) -> dict[str, Any]:
    options = [
        {"optionId": "yes-always", "name": "Always", "kind": "allow_always"},
        {"optionId": "yes", "name": "Allow", "kind": "allow_once"},
        {"optionId": "no", "name": "Reject", "kind": "reject_once"},
    ]
    tool = {"toolCallId": tid, "title": f"{kind} thing", "kind": kind}
    params = {"sessionId": sid, "toolCall": tool, "options": options}
    return wire.call(
        next_id() if request_id is None else request_id, "session/request_permission", params
    )


def report(sid: str, value: Any) -> None:
    message = chunk(sid, json.dumps(value))
    if state.get("v2"):
        message["params"]["update"]["messageId"] = "report"
    wire.send(message)


def end(msg: dict[str, Any], reason: str = "end_turn") -> None:
    if state.get("v2"):  # the ack, then the turn's end
        idle = {"sessionUpdate": "state_update", "state": "idle", "stopReason": reason}
        sid = msg["params"]["sessionId"]
        wire.reply(msg, {"messageId": "prompt"})
        wire.send(update(sid, idle))
        return
    wire.reply(msg, {"stopReason": reason})


def on_prompt(msg: dict[str, Any]) -> None:
    sid = msg["params"]["sessionId"]
    words = msg["params"]["prompt"][0].get("text", "").split()
    name, args = (words[0], words[1:]) if words else ("hello", [])
    handler = PROMPTS.get(name)
    if handler is None:
        wire.send(chunk(sid, f"unknown scenario {name}"))
        end(msg)
        return
    handler(msg, sid, args)


def p_hello(msg, sid, args):
    wire.send(chunk(sid, "hello"))
    end(msg)


def p_flood(msg, sid, args):
    n = int(args[0])
    batch = []
    for i in range(n):
        batch.append(chunk(sid, str(i)))
        if len(batch) == 500:
            wire.send(*batch)
            batch = []
    wire.send(*batch)
    end(msg)


def p_dup_tool(msg, sid, args):
    wire.send(tool_call(sid, "t1", "read"))
    wire.send(tool_call(sid, "t1", "read", title="read thing again", rawInput={"a": 1}))
    wire.send(
        update(
            sid, {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}
        )
    )
    end(msg)


def p_late(msg, sid, args):
    late = update(sid, {"sessionUpdate": "available_commands_update", "availableCommands": []})
    wire.send(
        chunk(sid, "before"),
        {"jsonrpc": "2.0", "id": msg["id"], "result": {"stopReason": "end_turn"}},
        late,
    )


def p_unknown(msg, sid, args):
    wire.send(update(sid, {"sessionUpdate": "brand_new_kind", "payload": {"x": 1}}))
    odd = chunk(sid, "after")
    odd["params"]["update"]["futureField"] = [1, 2]
    wire.send(odd)
    end(msg)


def p_perm(msg, sid, args):
    kind = args[0] if args else "edit"
    wire.send(tool_call(sid, "p1", kind))
    answer = permission(sid, "p1", kind)
    report(sid, answer.get("result"))
    end(msg)


def p_perm_unannounced(msg, sid, args):
    answer = permission(sid, "ghost", "read")
    report(sid, answer.get("result"))
    end(msg)


def p_perm_hang(msg, sid, args):
    request_id = next_id()
    options = [{"optionId": "no", "name": "Reject", "kind": "reject_once"}]
    params = {"sessionId": sid, "toolCall": {"toolCallId": "h1", "title": "x"}, "options": options}
    wire.send(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "session/request_permission",
            "params": params,
        }
    )
    answer = wire.wait_response(request_id)  # the client answers when the turn is cancelled
    report(sid, answer.get("result"))
    end(msg, "cancelled")


def p_hang(msg, sid, args):
    wire.send(chunk(sid, "working"))
    wait_cancel(sid)
    wire.send(chunk(sid, "stopping"))
    end(msg, "cancelled")


def p_gate(msg, sid, args):
    import os
    import time

    wire.send(chunk(sid, "working"))
    while not os.path.exists(args[0]):  # the fake's own wait: the test creates the file
        time.sleep(0.02)
    wire.send(chunk(sid, "released"))
    end(msg)


def p_ignore_cancel(msg, sid, args):
    wire.send(chunk(sid, "working"))
    while wire._read_line() is not None:
        pass
    raise SystemExit(0)


def p_crash(msg, sid, args):
    wire.send(chunk(sid, "about to crash"))
    sys.stderr.write("fatal: the fake agent crashed on purpose\n")
    sys.stderr.flush()
    raise SystemExit(3)


def p_fs_read(msg, sid, args):
    params: dict[str, Any] = {"sessionId": sid, "path": args[0]}
    if len(args) >= 3:
        params.update(line=int(args[1]), limit=int(args[2]))
    answer = wire.call(next_id(), "fs/read_text_file", params)
    report(sid, answer.get("result", answer.get("error")))
    end(msg)


def p_fs_write(msg, sid, args):
    params = {"sessionId": sid, "path": args[0], "content": " ".join(args[1:])}
    answer = wire.call(next_id(), "fs/write_text_file", params)
    report(sid, answer.get("result", answer.get("error")))
    end(msg)


def p_term(msg, sid, args):
    created = wire.call(next_id(), "terminal/create", {"sessionId": sid, "command": " ".join(args)})
    tid = created["result"]["terminalId"]
    ref = {"sessionId": sid, "terminalId": tid}
    waited = wire.call(next_id(), "terminal/wait_for_exit", ref)
    output = wire.call(next_id(), "terminal/output", ref)
    wire.call(next_id(), "terminal/release", ref)
    report(sid, {"exit": waited["result"], "output": output["result"]})
    end(msg)


def p_run_unasked(msg, sid, args):
    """What a hostile agent does: run a command on the client's machine, asking no one."""
    text = msg["params"]["prompt"][0]["text"]
    params = {"sessionId": sid, **json.loads(text.split(None, 1)[1])}
    created = wire.call(next_id(), "terminal/create", params)
    result: dict[str, Any] = {"create": created.get("result", created.get("error"))}
    if "result" in created:
        ref = {"sessionId": sid, "terminalId": created["result"]["terminalId"]}
        result["exit"] = wire.call(next_id(), "terminal/wait_for_exit", ref).get("result")
        wire.call(next_id(), "terminal/release", ref)
    report(sid, result)
    end(msg)


def p_term_others(msg, sid, args):
    ref = {"sessionId": sid, "terminalId": "term-nope"}
    codes = {}
    for method in (
        "terminal/output",
        "terminal/wait_for_exit",
        "terminal/kill",
        "terminal/release",
    ):
        codes[method] = wire.call(next_id(), method, ref).get("error", {}).get("code")
    report(sid, codes)
    end(msg)


def p_caps(msg, sid, args):
    report(sid, state["caps"])
    end(msg)


def p_echo(msg, sid, args):
    report(sid, msg["params"]["prompt"])
    end(msg)


def p_ask(msg, sid, args):
    answer = wire.call(
        next_id(), "_agentao.cn/ask_user", {"sessionId": sid, "question": " ".join(args)}
    )
    report(sid, answer.get("result"))
    end(msg)


def p_ids(msg, sid, args):
    wire.send(tool_call(sid, "i1", "read"))
    first = permission(sid, "i1", "read", request_id=0)
    second = permission(sid, "i1", "read", request_id="req-abc")
    report(sid, [first.get("result"), second.get("result")])
    end(msg)


def p_error(msg, sid, args):
    wire.send(chunk(sid, "failing"))
    wire.error(msg, -32603, "Internal error: the model fell over")


def p_no_stop(msg, sid, args):
    wire.reply(msg, {"stop": "yes"})


def p_usage(msg, sid, args):
    usage = {"totalTokens": 15, "inputTokens": 12, "outputTokens": 3, "thoughtTokens": 1}
    wire.reply(msg, {"stopReason": "end_turn", "usage": usage})


PROMPTS = {
    "hello": p_hello,
    "flood": p_flood,
    "dup-tool": p_dup_tool,
    "late": p_late,
    "unknown": p_unknown,
    "perm": p_perm,
    "perm-unannounced": p_perm_unannounced,
    "perm-hang": p_perm_hang,
    "hang": p_hang,
    "gate": p_gate,
    "ignore-cancel": p_ignore_cancel,
    "crash": p_crash,
    "fs-read": p_fs_read,
    "fs-write": p_fs_write,
    "term": p_term,
    "run-unasked": p_run_unasked,
    "term-others": p_term_others,
    "caps": p_caps,
    "echo": p_echo,
    "ask": p_ask,
    "ids": p_ids,
    "error": p_error,
    "no-stop": p_no_stop,
    "usage": p_usage,
}


def main() -> None:
    while (msg := wire.read()) is not None:
        method = msg.get("method")
        if method == "initialize":
            on_initialize(msg)
        elif method == "authenticate":
            state["authed"] = True
            wire.reply(msg, {})
        elif method in ("session/new",):
            on_session_new(msg)
        elif method in ("session/load", "session/resume"):
            wire.send(chunk(msg["params"]["sessionId"], "replayed"))
            wire.reply(msg, {})
        elif method == "session/prompt":
            on_prompt(msg)
        elif method == "session/list" and "--endless-list" in ARGS:
            page = int(msg["params"].get("cursor") or 0)
            listed = {"sessionId": f"s{page}", "cwd": msg["params"].get("cwd", "/")}
            wire.reply(msg, {"sessions": [listed], "nextCursor": str(page + 1)})
        elif method in ("session/set_mode", "session/set_config_option", "session/close"):
            wire.reply(msg, {})
        elif "id" in msg and method is not None:
            wire.error(msg, -32601, f"Method not found: {method}")


if __name__ == "__main__":
    main()
