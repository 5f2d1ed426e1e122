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
