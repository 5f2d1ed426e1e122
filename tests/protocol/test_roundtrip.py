"""Round trips: wire -> struct -> wire loses no known field, for the seed's message shapes
(tests/data/seed_messages.jsonl) and what four real agents sent (tests/data/real-agent-transcripts);
and the schema's own `default` values against the generated structs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from agentao.protocol import methods, schema
from agentao.protocol.decode import decode_lenient, decode_strict, encode, params_of_line
from agentao.protocol.v2 import methods as v2_methods

DATA = Path(__file__).resolve().parents[1] / "data"
SPEC = Path(__file__).resolve().parents[2] / "spec"


def payloads(path: Path) -> Iterator[tuple[str, Any, Any]]:
    """(label, type, wire value) for every params/result of a method the table knows, by
    the table of the version the recording settled on (its `initialize` result).

    Lines are `{"dir": "send"|"recv", "msg": ...}`: send = client -> agent."""
    entries = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    table = v2_methods if _settled(entries) == 2 else methods
    pending: dict[tuple[str, Any], methods.MethodSpec] = {}
    for n, entry in enumerate(entries, 1):
        msg, sender = entry["msg"], entry["dir"]
        label = f"{path.name}:{n}"
        if "method" in msg:
            kind = "request" if "id" in msg else "notification"
            side = "agent" if sender == "send" else "client"
            spec = table.find_method(msg["method"], side, kind) or table.find_method(
                msg["method"], "protocol", kind
            )
            if spec is None:  # an extension method (`_vendor/...`): plain dicts by design
                continue
            if kind == "request":
                pending[(sender, msg["id"])] = spec
            yield f"{label} {msg['method']}", spec.params, _empty(msg.get("params"))
        elif "result" in msg:
            spec = pending.pop(("recv" if sender == "send" else "send", msg["id"]), None)
            if spec is not None:
                yield f"{label} {spec.method} result", spec.result, _empty(msg["result"])


def _settled(entries: list[dict[str, Any]]) -> int:
    """The protocol version the agent answered `initialize` with (1 when none is recorded)."""
    for entry in entries:
        result = entry["msg"].get("result")
        if entry["dir"] == "recv" and isinstance(result, dict) and "protocolVersion" in result:
            return result["protocolVersion"]
    return 1


def _empty(value: Any) -> Any:
    """Absent/null params or result stand for `{}` (the endpoint's rule; the recording client
    answers `fs/write_text_file` with `null`)."""
    return {} if value is None else value


def cases(*paths: Path) -> list:
    return [pytest.param(tp, wire, id=label) for p in paths for label, tp, wire in payloads(p)]


SEEDS = cases(DATA / "seed_messages.jsonl")
TRANSCRIPTS = cases(*sorted((DATA / "real-agent-transcripts").glob("*.jsonl")))


def assert_kept(wire: Any, value: Any, path: str = "$") -> None:
    """Every known field of `value` matches `wire`; those absent from `wire` hold defaults."""
    if isinstance(value, schema.UnknownVariant):
        assert value.raw == wire, path
    elif isinstance(value, msgspec.Struct):
        assert isinstance(wire, dict), path
        config = value.__struct_config__
        if config.tag_field:
            assert wire[config.tag_field] == config.tag, path
        for field in msgspec.structs.fields(value):
            got = getattr(value, field.name)
            where = f"{path}.{field.encode_name}"
            if field.encode_name in wire:
                assert_kept(wire[field.encode_name], got, where)
            else:
                default = (
                    field.default_factory()
                    if field.default_factory is not msgspec.NODEFAULT
                    else field.default
                )
                assert got == default, where
    elif isinstance(value, list):
        assert isinstance(wire, list) and len(wire) == len(value), path
        for i, (w, v) in enumerate(zip(wire, value, strict=True)):
            assert_kept(w, v, f"{path}[{i}]")
    elif isinstance(value, dict) and not isinstance(wire, dict):
        raise AssertionError(path)
    elif isinstance(value, dict):
        assert wire.keys() == value.keys(), path
        for key in wire:
            assert_kept(wire[key], value[key], f"{path}.{key}")
    else:
        assert wire == value and type(wire) is type(value), path


def check_round_trip(tp: Any, wire: Any, decode) -> None:
    value = decode(tp, wire)
    assert_kept(wire, value)
    again = json.loads(encode(value))
    assert_kept(again, value)  # what we write says the same, modulo defaults and key order
    assert decode(tp, again) == value


@pytest.mark.parametrize(("tp", "wire"), SEEDS)
def test_seed_messages_round_trip_strictly(tp: Any, wire: Any) -> None:
    check_round_trip(tp, wire, decode_strict)


@pytest.mark.parametrize(("tp", "wire"), SEEDS)
def test_seed_messages_round_trip_leniently(tp: Any, wire: Any) -> None:
    check_round_trip(tp, wire, decode_lenient)


def test_seed_wire_is_reproduced_exactly() -> None:
    """Our own messages come back as the same JSON, key order aside, once default-looking values
    are set aside: msgspec omits a field equal to its default (None, false, []), and writes an
    object default such as `clientCapabilities.auth` as `{}`. assert_kept checks each field."""
    strays = {"session/set_mode result": {"modeId"}}  # agentao's echo, not a schema field
    for param in SEEDS:
        tp, wire = param.values
        again = _plain(json.loads(encode(decode_strict(tp, wire))))
        ignore = next((keys for name, keys in strays.items() if param.id.endswith(name)), set())
        assert again == _plain(wire, ignore), param.id


def _plain(value: Any, ignore: set[str] = frozenset()) -> Any:
    if isinstance(value, dict):
        out = {k: _plain(v, ignore) for k, v in value.items() if k not in ignore}
        return {k: v for k, v in out.items() if v not in (None, False, [], {})}
    if isinstance(value, list):
        return [_plain(v, ignore) for v in value]
    return value


def test_seed_covers_every_stable_update_kind() -> None:
    kinds = {
        wire["update"]["sessionUpdate"]
        for param in SEEDS
        for tp, wire in [param.values]
        if tp is schema.SessionNotification
    }
    all_kinds = {m.__struct_config__.tag for m in schema.SessionUpdate.__args__}
    assert kinds == all_kinds


@pytest.mark.parametrize(("tp", "wire"), TRANSCRIPTS)
def test_real_agent_messages_round_trip_leniently(tp: Any, wire: Any) -> None:
    check_round_trip(tp, wire, decode_lenient)


@pytest.mark.parametrize(("tp", "wire"), SEEDS + TRANSCRIPTS)
@pytest.mark.parametrize("lenient", [False, True], ids=["strict", "lenient"])
def test_params_read_from_the_line_are_what_the_dicts_convert_to(
    tp: Any, wire: Any, lenient: bool
) -> None:
    """The connection reads a message's params straight from its line (decode.py
    `params_of_line`) and converts the dicts only when that refuses: both give the same
    value, or the line's refusal leaves it to the dicts."""
    line = json.dumps({"jsonrpc": "2.0", "method": "m", "params": wire}).encode()
    decode = decode_lenient if lenient else decode_strict
    try:
        expected = decode(tp, wire)
    except msgspec.ValidationError:
        with pytest.raises(msgspec.ValidationError):
            params_of_line(tp, line, lenient=lenient)
        return
    try:
        got = params_of_line(tp, line, lenient=lenient)
    except msgspec.ValidationError:
        return  # needs a repair: the dicts' path makes it
    assert got == expected
    assert encode(got) == encode(expected)


def test_transcripts_were_read() -> None:
    assert len(TRANSCRIPTS) > 100


# -- the schema's own values -----------------------------------------------------------------
# The v1 schemas carry no `examples` (a test looping over them checked nothing); the values
# they do carry are property `default`s. Each must decode strictly as its property's type and
# equal what the generated struct defaults to, so a default read off the wire and a field
# left out mean the same.


def schema_defaults() -> list:
    spec = json.loads((SPEC / "acp-schema.v1.unstable.json").read_text())["$defs"]
    return [
        pytest.param(owner, prop, d["default"], id=f"{owner}.{prop}")
        for owner, node in spec.items()
        for prop, d in (node.get("properties") or {}).items()
        if "default" in d
    ]


DEFAULTS = schema_defaults()


def test_the_schema_has_defaults_to_check() -> None:
    assert len(DEFAULTS) >= 20


@pytest.mark.parametrize(("owner", "prop", "default"), DEFAULTS)
def test_schema_defaults_are_the_generated_defaults(owner: str, prop: str, default: Any) -> None:
    field = {f.encode_name: f for f in msgspec.structs.fields(getattr(schema, owner))}[prop]
    generated = (
        field.default_factory() if field.default_factory is not msgspec.NODEFAULT else field.default
    )
    assert decode_strict(field.type, default) == generated


UPDATES = [p for p in SEEDS + TRANSCRIPTS if p.values[0] is schema.SessionNotification]


def test_the_updates_are_there() -> None:
    assert len(UPDATES) > 50


@pytest.mark.parametrize(("tp", "wire"), UPDATES)
def test_an_update_read_as_bytes_is_what_the_dicts_give(tp: Any, wire: Any) -> None:
    """A `session/update` read by the connection's fast path (its update kept as the bytes
    received, connection.py `_receive_passed`) gives the handler what the dict path gives,
    and bytes that parse to the object the dict path holds."""
    from agentao.protocol import connection
    from agentao.protocol.decode import json_of

    line = json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": wire}).encode()
    fast = connection.Connection("client").receive(line)
    slow_conn = connection.Connection("client")
    slow_conn._receive_passed = lambda _line: connection._DICT_PATH  # type: ignore[method-assign]
    slow = slow_conn.receive(line)
    assert type(fast) is type(slow) is connection.Notification
    assert encode(fast.params) == encode(slow.params) and fast.session_id == slow.session_id
    assert json_of(fast.message["params"]["update"]) == slow.message["params"]["update"]
