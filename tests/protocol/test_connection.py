"""The sans-IO connection on answers it cannot take: our own request still ends.

(Requests it cannot take are rows in test_conformance.py.)"""

from __future__ import annotations

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


def test_an_updates_params_are_read_from_its_line_not_converted_from_dicts() -> None:
    from agentao.protocol import schema
    from agentao.protocol.connection import Notification

    conn = Connection("client")
    calls = dict_path_refused(conn)
    event = conn.receive(UPDATE_LINE)
    assert isinstance(event, Notification) and calls == []
    chunk = schema.AgentMessageChunk(content=schema.TextContentBlock(text="x"))
    assert event.params == schema.SessionNotification(session_id="s", update=chunk)
    assert event.message["params"]["update"]["content"] == {"type": "text", "text": "x"}


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
