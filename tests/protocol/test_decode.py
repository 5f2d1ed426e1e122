"""Strict and lenient decoding (protocol/decode.py)."""

from __future__ import annotations

import json

import msgspec
import pytest

from agentao.protocol import schema
from agentao.protocol.decode import (
    MAX_REPAIRS,
    decode_lenient,
    decode_strict,
    encode,
    to_builtins,
)


def update(**fields) -> dict:
    return {"sessionId": "s1", "update": fields}


def text(t: str) -> dict:
    return {"type": "text", "text": t}


# -- strict --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"protocolVersion": True}, "Expected `int`, got `bool` - at `$.protocolVersion`"),
        ({"protocolVersion": "1"}, "Expected `int`, got `str` - at `$.protocolVersion`"),
        ({"protocolVersion": 1.0}, "Expected `int`, got `float` - at `$.protocolVersion`"),
        ({"protocolVersion": 70000}, "Expected `int` <= 65535 - at `$.protocolVersion`"),
        ({}, "Object missing required field `protocolVersion`"),
        (
            {"protocolVersion": 1, "clientCapabilities": []},
            "Expected `object`, got `array` - at `$.clientCapabilities`",
        ),
    ],
)
def test_strict_rejects_with_the_field_named(params: dict, message: str) -> None:
    with pytest.raises(msgspec.ValidationError) as info:
        decode_strict(schema.InitializeRequest, params)
    assert str(info.value) == message


def test_strict_is_generous_with_absence() -> None:
    req = decode_strict(schema.InitializeRequest, {"protocolVersion": 1})
    assert req.client_capabilities == schema.ClientCapabilities()
    assert req.client_capabilities.fs.read_text_file is False
    assert req.client_info is None


def test_unknown_fields_are_ignored_and_meta_kept() -> None:
    meta = {"_agentao.cn/trace": {"id": 7}, "x": [1, None]}
    req = decode_strict(
        schema.PromptRequest,
        {
            "sessionId": "s1",
            "prompt": [{**text("hi"), "_meta": {"k": 1}, "future": True}],
            "_meta": meta,
            "someNewField": {"a": 1},
        },
    )
    assert req.meta == meta and req.prompt[0].meta == {"k": 1}
    assert json.loads(encode(req)) == {
        "sessionId": "s1",
        "prompt": [{"type": "text", "text": "hi", "_meta": {"k": 1}}],
        "_meta": meta,
    }


def test_strict_does_not_repair() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"at `\$.update.status`"):
        decode_strict(
            schema.SessionNotification,
            update(sessionUpdate="tool_call_update", toolCallId="t1", status="bogus"),
        )


def test_default_on_null_holds_in_both_modes() -> None:
    servers = [
        {"type": "stdio", "name": "a", "command": "x", "args": None, "env": None},
        {"type": "sse", "name": "b", "url": "http://h", "headers": None},
    ]
    for decode in (decode_strict, decode_lenient):
        req = decode(schema.NewSessionRequest, {"cwd": "/w", "mcpServers": servers})
        assert (req.mcp_servers[0].args, req.mcp_servers[0].env) == ([], [])
        assert req.mcp_servers[1].headers == []


# -- lenient -------------------------------------------------------------------------------------


def test_bad_status_is_defaulted() -> None:
    n = decode_lenient(
        schema.SessionNotification,
        update(
            sessionUpdate="tool_call_update", toolCallId="t1", status="bogus", title="Read a.txt"
        ),
    )
    assert isinstance(n.update, schema.ToolCallUpdateSessionUpdate)
    assert n.update.status is None and n.update.title == "Read a.txt"


def test_one_bad_item_is_dropped_the_others_kept() -> None:
    content = [
        {"type": "content", "content": text("one")},
        {"type": "diff", "path": "/w/a", "newText": 5},  # invalid newText
        {"type": "terminal", "terminalId": "t9"},
        {"type": "diff", "path": "/w/b", "oldText": None, "newText": "x"},
    ]
    n = decode_lenient(
        schema.SessionNotification,
        update(
            sessionUpdate="tool_call",
            toolCallId="t1",
            title="Edit",
            content=content,
            locations=[{"path": "/w/a", "line": -1}, {"path": "/w/b", "line": 2}],
        ),
    )
    kept = n.update.content
    assert [type(c) for c in kept] == [
        schema.ContentToolCallContent,
        schema.TerminalToolCallContent,
        schema.DiffToolCallContent,
    ]
    assert kept[2].old_text is None and kept[2].new_text == "x"
    # innermost lenient place wins: the bad `line` is reset, its location kept
    assert [(loc.path, loc.line) for loc in n.update.locations] == [("/w/a", None), ("/w/b", 2)]


def test_invalid_optional_field_deep_inside_is_reset() -> None:
    result = decode_lenient(
        schema.InitializeResponse,
        {
            "protocolVersion": 1,
            "agentCapabilities": {
                "loadSession": "yes",
                "promptCapabilities": {"image": 1, "audio": True},
            },
            "agentInfo": {"name": "a"},
        },
    )  # version missing: agentInfo resets to None
    caps = result.agent_capabilities
    assert caps.load_session is False and caps.prompt_capabilities.audio is True
    assert caps.prompt_capabilities.image is False and result.agent_info is None


def test_required_list_marked_default_on_error_becomes_empty() -> None:
    n = decode_lenient(schema.SessionNotification, update(sessionUpdate="plan", entries="oops"))
    assert n.update.entries == []


def test_lenient_still_rejects_what_the_schema_does_not_excuse() -> None:
    with pytest.raises(msgspec.ValidationError, match=r"got `int` - at `\$.sessionId`"):
        decode_lenient(
            schema.SessionNotification,
            {
                "sessionId": 5,
                "update": {"sessionUpdate": "agent_message_chunk", "content": text("x")},
            },
        )
    with pytest.raises(msgspec.ValidationError, match="missing required field `sessionUpdate`"):
        decode_lenient(schema.SessionNotification, update(content=text("x")))


def test_repairs_are_bounded() -> None:
    entries = [{"content": "x", "priority": "nope", "status": "pending"}] * (MAX_REPAIRS + 1)
    with pytest.raises(msgspec.ValidationError, match="priority"):
        decode_lenient(schema.SessionNotification, update(sessionUpdate="plan", entries=entries))
    ok = decode_lenient(
        schema.SessionNotification,
        update(
            sessionUpdate="plan",
            entries=[*entries[:3], {"content": "y", "priority": "low", "status": "completed"}],
        ),
    )
    assert [e.content for e in ok.update.entries] == ["y"]


def test_the_input_is_never_mutated() -> None:
    raw = update(
        sessionUpdate="tool_call_update", toolCallId="t", status="bogus", content=[{"type": "diff"}]
    )
    before = json.dumps(raw)
    decode_lenient(schema.SessionNotification, raw)
    assert json.dumps(raw) == before


# -- unknown variants ----------------------------------------------------------------------------


def test_unknown_update_kind_is_kept_whole() -> None:
    raw = update(sessionUpdate="video_chunk", url="http://v", _meta={"a": 1})
    with pytest.raises(msgspec.ValidationError, match="Invalid value 'video_chunk'"):
        decode_strict(schema.SessionNotification, raw)
    n = decode_lenient(schema.SessionNotification, raw)
    assert isinstance(n.update, schema.UnknownVariant)
    assert n.update.tag == "video_chunk" and n.update.raw == raw["update"]
    assert json.loads(encode(n)) == raw
    assert to_builtins(n) == raw


def test_unknown_content_types_keep_their_place() -> None:
    raw = update(
        sessionUpdate="tool_call_update",
        toolCallId="t",
        content=[
            {"type": "diff"},  # invalid, dropped
            {"type": "content", "content": {"type": "hologram", "z": 1}},
            {"type": "video", "src": "v"},
            {"type": "terminal", "terminalId": "t1"},
        ],
    )
    n = decode_lenient(schema.SessionNotification, raw)
    first, second, third = n.update.content
    assert isinstance(first.content, schema.UnknownVariant) and first.content.tag == "hologram"
    assert second == schema.UnknownVariant({"type": "video", "src": "v"}, "type")
    assert third == schema.TerminalToolCallContent(terminal_id="t1")
    assert json.loads(encode(n))["update"]["content"] == raw["update"]["content"][1:]


def test_unknown_root_variant() -> None:
    value = decode_lenient(schema.SessionUpdate, {"sessionUpdate": "new_kind"})
    assert value == schema.UnknownVariant({"sessionUpdate": "new_kind"}, "sessionUpdate")


def test_open_union_other_case_decodes_strictly() -> None:
    state = {"state": "paused_by_user", "since": 3}
    n = decode_strict(schema.SubagentUpdate, {"sessionId": "sub", "state": state})
    assert isinstance(n.state, schema.UnknownVariant) and isinstance(n.state, schema.StateUpdate)
    assert n.state.raw == state and json.loads(encode(n))["state"] == state
    idle = decode_strict(
        schema.SubagentUpdate,
        {
            "sessionId": "sub",
            "state": {
                "state": "idle",
                "stopReason": "error",
                "error": {"code": -32603, "message": "boom"},
            },
        },
    )
    assert isinstance(idle.state, schema.IdleStateUpdateVariant)
    assert idle.state.error == schema.Error(code=-32603, message="boom")


# -- dispatched unions ---------------------------------------------------------------------------


MCP_SERVERS = [
    {"name": "files", "command": "mcp-files", "args": ["-v"], "env": [{"name": "K", "value": "v"}]},
    {"type": "stdio", "name": "git", "command": "mcp-git", "args": [], "env": []},
    {"type": "sse", "name": "s", "url": "http://h/sse", "headers": [{"name": "A", "value": "b"}]},
    {"type": "http", "name": "h", "url": "http://h/mcp", "headers": []},
]


def test_mcp_servers_decode_to_distinct_types_and_encode_back() -> None:
    req = decode_strict(schema.NewSessionRequest, {"cwd": "/w", "mcpServers": MCP_SERVERS})
    assert [type(s) for s in req.mcp_servers] == [
        schema.StdioMcpServer,
        schema.StdioMcpServer,
        schema.SseMcpServer,
        schema.HttpMcpServer,
    ]
    assert req.mcp_servers[0].env == [schema.EnvVariable(name="K", value="v")]
    assert json.loads(encode(req))["mcpServers"] == MCP_SERVERS
    built = schema.NewSessionRequest(
        cwd="/w",
        mcp_servers=[
            schema.StdioMcpServer(
                name="files",
                command="mcp-files",
                args=["-v"],
                env=[schema.EnvVariable(name="K", value="v")],
            )
        ],
    )
    assert json.loads(encode(built))["mcpServers"] == MCP_SERVERS[:1]


@pytest.mark.parametrize(
    ("server", "message"),
    [
        (
            {"type": "sse", "name": "s", "url": 5, "headers": []},
            "Expected `str`, got `int` - at `$.mcpServers[0].url`",
        ),
        ({"type": "ws", "name": "s"}, "Invalid value 'ws' - at `$.mcpServers[0].type`"),
        (
            {"name": "s", "command": "c", "args": [], "env": [{"name": "K"}]},
            "Object missing required field `value` - at `$.mcpServers[0].env[0]`",
        ),
        ("stdio", "Expected `object`, got `str` - at `$.mcpServers[0]`"),
    ],
)
def test_mcp_server_errors_name_the_whole_path(server, message: str) -> None:
    with pytest.raises(msgspec.ValidationError) as info:
        decode_strict(schema.NewSessionRequest, {"cwd": "/w", "mcpServers": [server]})
    assert str(info.value) == message


def test_untagged_unions_pick_by_shape() -> None:
    text_res = {"uri": "file:///a", "text": "hi"}
    blob_res = {"uri": "file:///b", "blob": "aGk=", "mimeType": "image/png"}
    for res, cls in [
        (text_res, schema.TextResourceContents),
        (blob_res, schema.BlobResourceContents),
    ]:
        block = decode_strict(schema.ContentBlock, {"type": "resource", "resource": res})
        assert type(block.resource) is cls and to_builtins(block)["resource"] == res
    flat = [{"value": "a", "name": "A"}]
    grouped = [{"group": "g", "name": "G", "options": flat}]
    for options, cls in [
        (flat, schema.SessionConfigSelectOption),
        (grouped, schema.SessionConfigSelectGroup),
    ]:
        option = decode_strict(
            schema.SessionConfigOption,
            {
                "type": "select",
                "id": "model",
                "name": "Model",
                "currentValue": "a",
                "options": options,
            },
        )
        assert type(option.options[0]) is cls and to_builtins(option)["options"] == options


def test_flattened_union_struct() -> None:
    for value in ("openai/gpt-4o", True):
        req = decode_strict(
            schema.SetSessionConfigOptionRequest,
            {"sessionId": "s", "configId": "model", "value": value},
        )
        assert req.value == value
    with pytest.raises(msgspec.ValidationError, match="value"):
        decode_strict(schema.SetSessionConfigOptionRequest, {"sessionId": "s", "configId": "m"})


def test_permission_outcomes() -> None:
    selected = decode_strict(
        schema.RequestPermissionResponse, {"outcome": {"outcome": "selected", "optionId": "allow"}}
    )
    assert selected.outcome == schema.SelectedRequestPermissionOutcome(option_id="allow")
    cancelled = schema.RequestPermissionResponse(outcome=schema.CancelledRequestPermissionOutcome())
    assert encode(cancelled) == b'{"outcome":{"outcome":"cancelled"}}'


def test_encode_refuses_foreign_objects() -> None:
    with pytest.raises(TypeError):
        encode(object())


def test_skip_invalid_items_through_a_dispatched_union() -> None:
    methods = [
        {"id": 5, "name": "broken"},  # id must be a string: dropped
        {"id": "login", "name": "Log in", "type": "terminal", "args": ["--login"]},
        {"id": "key", "name": "API key", "type": "env_var", "vars": [{"name": "KEY"}]},
        {"id": "oauth", "name": "OAuth"},
    ]
    result = decode_lenient(
        schema.InitializeResponse, {"protocolVersion": 1, "authMethods": methods}
    )
    login, key, oauth = result.auth_methods
    assert isinstance(login, schema.TerminalAuthMethod) and login.args == ["--login"]
    assert isinstance(key, schema.UnknownVariant) and isinstance(key, schema.AuthMethod)
    assert isinstance(oauth, schema.AgentAuthMethod) and oauth.type is None
    assert json.loads(encode(result))["authMethods"] == methods[1:]
    with pytest.raises(msgspec.ValidationError, match=r"at `\$.authMethods\[0\].id`"):
        decode_strict(schema.InitializeResponse, {"protocolVersion": 1, "authMethods": methods})
