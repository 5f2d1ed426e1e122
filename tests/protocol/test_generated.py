"""The generated wire types (protocol/schema.py) and method table (protocol/methods.py)."""

from __future__ import annotations

import inspect
import json
import shutil
import subprocess
import sys
import typing
from pathlib import Path

import msgspec
import pytest

from agentao.protocol import decode, methods, schema
from agentao.protocol.v2 import methods as v2_methods
from agentao.protocol.v2 import schema as v2_schema

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ROOT / "src/agentao/protocol"
DEFS = json.loads((ROOT / "spec/acp-schema.v1.unstable.json").read_text())["$defs"]
STABLE = json.loads((ROOT / "spec/acp-schema.v1.json").read_text())["$defs"]


def _structs() -> list[type[msgspec.Struct]]:
    return [
        v
        for v in vars(schema).values()
        if isinstance(v, type) and issubclass(v, msgspec.Struct) and v is not schema._Base
    ]


GENERATED_FILES = ("schema.py", "methods.py", "v2/schema.py", "v2/methods.py")


def test_generated_files_match_the_schema(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, str(ROOT / "scripts/gen_schema.py"), "--out-dir", str(tmp_path)],
        check=True,
        cwd=ROOT,
    )
    for name in GENERATED_FILES:
        fresh = (tmp_path / name).read_text(encoding="utf-8")
        current = (GENERATED / name).read_text(encoding="utf-8")
        assert fresh == current, (
            f"src/agentao/protocol/{name} drifted from spec/; regenerate it with "
            "`python scripts/gen_schema.py` (never edit it by hand)"
        )


@pytest.mark.skipif(shutil.which("ruff") is None, reason="ruff not installed")
def test_generated_files_are_formatted() -> None:
    files = [str(GENERATED / name) for name in GENERATED_FILES]
    done = subprocess.run(
        ["ruff", "format", "--check", "--isolated", "--line-length", "100", *files],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_object_def_has_a_struct_with_exact_wire_names() -> None:
    for name, d in DEFS.items():
        if d.get("type") != "object" or d.get("x-docs-ignore") or "anyOf" in d or "oneOf" in d:
            continue
        cls = getattr(schema, name)
        wire = {f.encode_name for f in msgspec.structs.fields(cls)}
        assert wire == set(d.get("properties", {})), name
        required = {f.encode_name for f in msgspec.structs.fields(cls) if f.required}
        assert required == set(d.get("required", [])), name


def test_struct_config() -> None:
    for cls in _structs():
        config = cls.__struct_config__
        writes_nulls = any(base.__name__ == "Diff" for base in cls.__mro__)
        assert config.omit_defaults != writes_nulls, cls
        assert not config.forbid_unknown_fields, cls
        kinds = {p.kind for p in inspect.signature(cls).parameters.values()}
        assert kinds <= {inspect.Parameter.KEYWORD_ONLY}, cls


def test_new_file_diff_writes_old_text_null() -> None:
    diff = schema.DiffToolCallContent(path="/w/new.txt", new_text="hi")
    assert b'"oldText":null' in decode.encode(diff)


def test_meta_and_camel_names() -> None:
    fields = {f.name: f.encode_name for f in msgspec.structs.fields(schema.NewSessionRequest)}
    assert fields["meta"] == "_meta"
    assert fields["mcp_servers"] == "mcpServers"
    assert fields["additional_directories"] == "additionalDirectories"
    assert {f.name: f.encode_name for f in msgspec.structs.fields(schema.PromptRequest)}[
        "session_id"
    ] == "sessionId"


# Names other layers code against; renaming one is an API change, not a regeneration detail.
VARIANTS = {
    "SessionUpdate": {
        "user_message_chunk": "UserMessageChunk",
        "agent_message_chunk": "AgentMessageChunk",
        "agent_thought_chunk": "AgentThoughtChunk",
        "tool_call": "ToolCallSessionUpdate",
        "tool_call_update": "ToolCallUpdateSessionUpdate",
        "plan": "PlanSessionUpdate",
        "available_commands_update": "AvailableCommandsUpdateSessionUpdate",
        "current_mode_update": "CurrentModeUpdateSessionUpdate",
        "config_option_update": "ConfigOptionUpdateSessionUpdate",
        "session_info_update": "SessionInfoUpdateSessionUpdate",
        "usage_update": "UsageUpdateSessionUpdate",
    },
    "ContentBlock": {
        "text": "TextContentBlock",
        "image": "ImageContentBlock",
        "audio": "AudioContentBlock",
        "resource_link": "ResourceLinkContentBlock",
        "resource": "ResourceContentBlock",
    },
    "ToolCallContent": {
        "content": "ContentToolCallContent",
        "diff": "DiffToolCallContent",
        "terminal": "TerminalToolCallContent",
    },
    "RequestPermissionOutcome": {
        "cancelled": "CancelledRequestPermissionOutcome",
        "selected": "SelectedRequestPermissionOutcome",
    },
    "SessionConfigOption": {
        "select": "SelectSessionConfigOption",
        "boolean": "BooleanSessionConfigOption",
    },
}


@pytest.mark.parametrize("union", sorted(VARIANTS))
def test_tagged_union_variants(union: str) -> None:
    members = typing.get_args(getattr(schema, union))
    tags = {m.__struct_config__.tag: m.__name__ for m in members}
    assert VARIANTS[union].items() <= tags.items()
    tag_field = members[0].__struct_config__.tag_field
    for variant in DEFS[union]["oneOf"]:  # every variant inherits its $def's fields
        tag = variant["properties"][tag_field]["const"]
        cls = getattr(schema, tags[tag])
        for ref in variant.get("allOf", []):
            assert issubclass(cls, getattr(schema, ref["$ref"].rsplit("/", 1)[1]))


def test_mcp_server_variants() -> None:
    assert schema.UNION_DISPATCH[schema.McpServer].untagged == (schema.StdioMcpServer,)
    for name, base in [
        ("HttpMcpServer", "McpServerHttp"),
        ("SseMcpServer", "McpServerSse"),
        ("AcpMcpServer", "McpServerAcp"),
        ("StdioMcpServer", "McpServerStdio"),
    ]:
        cls = getattr(schema, name)
        assert issubclass(cls, getattr(schema, base)) and issubclass(cls, schema.McpServer)


def test_enums_and_integers() -> None:
    assert typing.get_args(schema.StopReason) == (
        "end_turn",
        "max_tokens",
        "max_turn_requests",
        "refusal",
        "cancelled",
    )
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert(65536, schema.ProtocolVersion)
    with pytest.raises(msgspec.ValidationError, match="got `bool`"):
        msgspec.convert(True, schema.ProtocolVersion)


# -- methods.py ----------------------------------------------------------------------------------


def _x_methods(defs: dict) -> set[tuple[str, str]]:
    return {
        (d["x-method"], d["x-side"])
        for n, d in defs.items()
        if "x-method" in d and not n.endswith("Response")
    }


def test_method_table_covers_both_schemas() -> None:
    assert {(s.method, s.side) for s in methods.METHOD_SPECS} == _x_methods(DEFS)
    for spec in methods.METHOD_SPECS:
        assert spec.stable == (spec.params.__name__ in STABLE), spec
        if spec.kind == "request":  # METHODS holds the request when a name has two specs
            assert methods.METHODS[spec.method] is spec
    assert set(methods.METHODS) == {s.method for s in methods.METHOD_SPECS}


@pytest.mark.parametrize("spec", methods.METHOD_SPECS, ids=lambda s: f"{s.method}:{s.side}")
def test_method_types_are_real(spec: methods.MethodSpec) -> None:
    assert spec.kind in ("request", "notification")
    assert spec.side in ("agent", "client", "protocol", "proxy")
    assert issubclass(spec.params, msgspec.Struct)
    assert DEFS[spec.params.__name__]["x-method"] == spec.method
    if spec.kind == "notification":
        assert spec.result is None
    elif spec.result is not typing.Any:  # proxy/successor's result is untyped
        assert issubclass(spec.result, msgspec.Struct)
        assert DEFS[spec.result.__name__]["x-method"] == spec.method


@pytest.mark.parametrize(
    ("method", "python_name"),
    [
        ("session/set_mode", "session_set_mode"),
        ("$/cancel_request", "cancel_request"),
        ("fs/read_text_file", "fs_read_text_file"),
        ("initialize", "initialize"),
        ("session/new", "session_new"),
        ("terminal/wait_for_exit", "terminal_wait_for_exit"),
    ],
)
def test_python_name_is_mechanical(method: str, python_name: str) -> None:
    assert methods.METHODS[method].python_name == python_name
    for spec in methods.METHOD_SPECS:
        assert spec.python_name == spec.method.removeprefix("$/").replace("/", "_")


def test_methods_with_two_specs() -> None:
    request = methods.find_method("mcp/message", "client", "request")
    notification = methods.find_method("mcp/message", "agent", "notification")
    assert request.params is schema.MessageMcpRequest
    assert request.result is schema.MessageMcpResponse
    assert notification.params is schema.MessageMcpNotification
    assert methods.METHODS["mcp/message"] is request
    assert methods.find_method("session/new", "client", "request") is None
    assert methods.METHODS["session/new"].params is schema.NewSessionRequest
    assert methods.METHODS["session/update"].side == "client"


# -- v2 ------------------------------------------------------------------------------------------

V2_DEFS = json.loads((ROOT / "spec/acp-schema.v2.unstable.json").read_text())["$defs"]
V2_STABLE = json.loads((ROOT / "spec/acp-schema.v2.json").read_text())["$defs"]


def test_v2_method_table_covers_its_schemas() -> None:
    assert {(s.method, s.side) for s in v2_methods.METHOD_SPECS} == _x_methods(V2_DEFS)
    for spec in v2_methods.METHOD_SPECS:
        assert isinstance(spec, methods.MethodSpec)  # one shape for every version's table
        assert spec.stable == (spec.params.__name__ in V2_STABLE), spec
        assert spec.params.__module__ == "agentao.protocol.v2.schema"
    assert v2_methods.find_method("session/load", "agent", "request") is None  # gone in v2
    assert v2_methods.find_method("session/resume", "agent", "request") is not None


def test_v2_shares_v1_runtime_classes_and_decodes_state_update() -> None:
    assert v2_schema.UnknownVariant is schema.UnknownVariant
    assert v2_schema.DispatchedUnion is schema.DispatchedUnion
    wire = {
        "sessionId": "s1",
        "update": {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
    }
    note = decode.decode_strict(v2_schema.UpdateSessionNotification, wire)
    assert isinstance(note.update, v2_schema.StateUpdateSessionUpdate)
    assert (note.update.state, note.update.stop_reason) == ("idle", "end_turn")
    assert msgspec.json.decode(decode.encode(note)) == wire
    odd = {"sessionId": "s1", "update": {"sessionUpdate": "_x.example/new", "n": 1}}
    kept = decode.decode_lenient(v2_schema.UpdateSessionNotification, odd)
    assert isinstance(kept.update, schema.UnknownVariant)
    assert msgspec.json.decode(decode.encode(kept)) == odd
