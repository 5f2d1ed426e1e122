"""The sans-IO connection on answers it cannot take: our own request still ends.

(Requests it cannot take are rows in test_conformance.py.)"""

from __future__ import annotations

import pytest

from agentao.protocol.connection import Connection, Response
from agentao.protocol.errors import PeerError
from agentao.protocol.framing import Oversize


def asking() -> tuple[Connection, int]:
    conn = Connection("agent")
    request_id, _ = conn.request("fs/read_text_file", {"sessionId": "s", "path": "/a"})
    return conn, request_id


def test_a_result_with_a_lone_surrogate_fails_the_request() -> None:
    conn, rid = asking()
    line = b'{"jsonrpc":"2.0","id":%d,"result":{"content":"a\\ud800"}}' % rid
    event = conn.receive(line)
    assert isinstance(event, Response) and isinstance(event.error, PeerError)
    assert event.error.data["reason"] == "lone surrogate"
    assert "$.content" in event.error.message
    assert conn.pending_count == 0


def test_an_oversize_result_fails_the_request() -> None:
    conn, rid = asking()
    head = b'{"jsonrpc":"2.0","id":%d,"result":{"content":"xxxx' % rid
    event = conn.receive(Oversize(10**8, 64, head, b'xxxx"}}'))
    assert isinstance(event, Response) and event.id == rid
    assert event.error.code == -32600 and event.error.data["lineBytes"] == 10**8
    assert conn.pending_count == 0


def test_an_oversize_answer_to_no_request_of_ours_is_dropped_unanswered() -> None:
    conn, _ = asking()
    head = b'{"jsonrpc":"2.0","id":99,"result":{"content":"xxxx'
    assert conn.receive(Oversize(10**8, 64, head, b'xxxx"}}')) is None
    assert conn.pending_count == 1


def test_a_notification_is_not_tracked_by_the_cycle_collector() -> None:
    # One is made per streamed update: untracked, a young collection does not scan it.
    import gc

    from agentao.protocol.connection import Notification

    line = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s",'
        b'"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}'
    )
    event = Connection("client").receive(line)
    assert isinstance(event, Notification) and event.session_id == "s"
    assert not gc.is_tracked(event)


UPDATE_LINE = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s",'
    b'"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}'
)


def dict_path_refused(conn: Connection) -> list[object]:
    """Make converting params from the message's dicts (the slow path) record its call."""
    conn._decoder()
    calls: list[object] = []
    decode = conn._decode

    def recording(tp: object, params: object) -> object:
        calls.append(params)
        return decode(tp, params)

    conn._decode = recording
    return calls


def test_an_update_is_read_from_its_line_with_no_dicts(monkeypatch) -> None:
    """Typed once: the params straight into their types, the update kept as the bytes
    received (for a relay to pass on); neither the line nor the params become dicts."""
    import msgspec

    from agentao.protocol import connection, schema
    from agentao.protocol.connection import Notification

    lines: list[bytes] = []
    whole = connection._decode_json
    monkeypatch.setattr(connection, "_decode_json", lambda line: lines.append(line) or whole(line))
    conn = Connection("client")
    calls = dict_path_refused(conn)
    event = conn.receive(UPDATE_LINE)
    assert isinstance(event, Notification) and calls == [] and lines == []
    chunk = schema.AgentMessageChunk(content=schema.TextContentBlock(text="x"))
    assert event.params == schema.SessionNotification(session_id="s", update=chunk)
    wire = event.message["params"]["update"]
    assert type(wire) is msgspec.Raw
    assert bytes(wire) == UPDATE_LINE.split(b'"update":')[1][:-2]


def dict_path_only(conn: Connection) -> Connection:
    from agentao.protocol import connection

    conn._receive_passed = lambda line: connection._DICT_PATH  # type: ignore[method-assign]
    return conn


FAST_PATH_EDGES = [
    UPDATE_LINE,
    UPDATE_LINE.replace(b'"jsonrpc":"2.0"', b'"jsonrpc":"1.0"'),
    UPDATE_LINE.replace(b'"method"', b'"id":7,"method"'),
    UPDATE_LINE.replace(b'"method"', b'"id":null,"method"'),
    UPDATE_LINE.replace(b'"sessionId":"s"', b'"sessionId":5'),
    UPDATE_LINE.replace(b'"text":"x"', b'"text":7'),
    UPDATE_LINE.replace(b'"text":"x"', b'"text":"x","extra":"\xff"'),
    UPDATE_LINE.replace(b'"text":"x"', b'"text":"\\ud800"'),
    UPDATE_LINE.replace(b'"text":"x"', b'"text":"caf\xc3\xa9"'),
    UPDATE_LINE.replace(b'"sessionId":"s",', b'"sessionId":"s","_meta":{"k":[1,2]},'),
    UPDATE_LINE.replace(b"agent_message_chunk", b"kind_of_tomorrow"),
    UPDATE_LINE.replace(b'"params":{', b'"params":[').replace(b"}}}", b"}}]"),
    UPDATE_LINE[:-1],
    b'{"jsonrpc":"2.0","method":"session/update"}',
    b'{"jsonrpc":"2.0","method":"session/prompt","params":{"note":"session/update"}}',
    b'{"jsonrpc":"2.0","method":"session/update","params":' + b"[" * 5000 + b"]" * 5000 + b"}",
]


@pytest.mark.parametrize("line", FAST_PATH_EDGES)
def test_what_the_fast_read_refuses_reads_as_the_dict_path_does(line: bytes) -> None:
    """Every line gives the event the dict path gives: the same kind, params, session and
    error reply; an update the fast read took holds the bytes the dict path would parse."""
    from agentao.protocol.decode import json_of

    fast, slow = (
        Connection("client").receive(line),
        dict_path_only(Connection("client")).receive(line),
    )
    assert type(fast) is type(slow)
    if slow is None:
        return
    for name in ("params", "session_id", "method", "reply"):
        assert repr(getattr(fast, name, None)) == repr(getattr(slow, name, None)), name
    if hasattr(slow, "message"):
        assert json_of(fast.message["params"]["update"]) == slow.message["params"]["update"]


def test_a_number_no_float_holds_in_a_member_the_types_skip_is_passed_on_as_sent() -> None:
    """The dict path cannot read `1e999` (it dropped the whole update); read as bytes, the
    member the types skip is passed on as the agent wrote it, and read as its literal."""
    from agentao.protocol.decode import json_of

    line = UPDATE_LINE.replace(b'"text":"x"', b'"text":"x","big":1e999')
    assert dict_path_only(Connection("client")).receive(line) is None
    event = Connection("client").receive(line)
    assert event is not None and event.params.update.content.text == "x"
    wire = event.message["params"]["update"]
    assert b'"big":1e999' in bytes(wire)
    assert json_of(wire)["content"]["big"] == "1e999"


def test_params_that_need_a_repair_still_take_the_dict_path() -> None:
    from agentao.protocol.schema import UnknownVariant

    conn = Connection("client")
    calls = dict_path_refused(conn)
    event = conn.receive(UPDATE_LINE.replace(b"agent_message_chunk", b"kind_of_tomorrow"))
    assert event is not None and len(calls) == 1
    assert isinstance(event.params.update, UnknownVariant)
    assert event.params.update.raw["sessionUpdate"] == "kind_of_tomorrow"


def test_a_repeated_params_key_reads_as_the_message_does() -> None:
    """The typed params and the message's dict come from the same (last) `params`: a
    line cannot show the handler one session and the log another."""
    conn = Connection("client")
    line = (
        UPDATE_LINE[:-1]
        + b',"params":'
        + UPDATE_LINE.split(b'"params":')[1].replace(b'"s"', b'"t"')
    )
    event = conn.receive(line)
    assert event is not None
    assert event.params.session_id == event.message["params"]["sessionId"] == "t"
    assert event.session_id == "t"
