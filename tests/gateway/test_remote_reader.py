"""One reading of a conversation's log for remote clients, here and on another replica.

What a frame means to remote clients (an update sent as a reference to the log, a
permission question asked of every client and withdrawn when the log records the
answer, a turn's end ending the prompt that waits on it) is `ConversationReader`'s
alone; the relay (a session live here) and the far session (live on another replica)
only say where frames come from and where answers go. Their behaviour, end to end, is
tested in test_remote_acp.py, test_one_log.py and test_replicas.py.
"""

from __future__ import annotations

from agentao.gateway.remote.far import FarSession
from agentao.gateway.remote.reader import ConversationReader, open_requests
from agentao.gateway.remote.relay import SessionRelay
from agentao.store.gateway_records import TaskEvent

FRAME_HANDLING = ("read", "_send", "_ask", "_answered", "_end", "ended", "_replay", "attach")


def test_here_and_far_read_the_log_through_one_reader() -> None:
    for reader in (SessionRelay, FarSession):
        assert issubclass(reader, ConversationReader)
    # Neither handles frames itself (the relay only falls back to the agent's replay).
    assert not set(vars(FarSession)) & set(FRAME_HANDLING)
    assert set(vars(SessionRelay)) & set(FRAME_HANDLING) == {"_replay"}


def _frame(task: str, seq: int, kind: str, request: str = "") -> TaskEvent:
    return TaskEvent(task, seq, kind, 0.0, {"requestId": request} if request else {})


def test_the_questions_still_open_are_those_no_frame_answered_of_turns_not_over() -> None:
    log = [
        _frame("t1", 1, "task-started"),
        _frame("t1", 2, "permission-request", "p1"),
        _frame("t1", 3, "task-ended"),  # its question died with it
        _frame("t2", 4, "task-started"),
        _frame("t2", 5, "permission-request", "p2"),
        _frame("t2", 6, "permission-response", "p2"),
        _frame("t2", 7, "permission-request", "p3"),
    ]
    assert [f["requestId"] for f in open_requests(log)] == ["p3"]
