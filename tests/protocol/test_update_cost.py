"""What the endpoint pays per streamed update, from its line to a synchronous handler.

A client (and the gateway, which is one) reads every `session/update` of an answer
through `LineBuffer.feed`, `Connection.receive` and `Endpoint._dispatch` into its
handler's lane: thousands per turn, so each Python call on the way shows in the relay's
CPU per chunk (bench/gateway.py). Counted with a trace function, not timed. The checks
on the way (envelope, method, lifecycle, params against the schema) stay: a damaged
update is still dropped, and the control shows the handler sees what was sent.
"""

from __future__ import annotations

import msgspec

from agentao.protocol import schema
from agentao.protocol.endpoint import Endpoint
from agentao.protocol.framing import LineBuffer
from tests.gateway.test_relay_cost import agentao_lines


def update_line(text: str, session_id: str = "s1") -> bytes:
    update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}
    message = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session_id, "update": update},
    }
    return msgspec.json.encode(message) + b"\n"


class Handler:
    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    def session_update(self, params: schema.SessionNotification) -> None:
        self.seen.append((params.session_id, params.update.content.text))


def test_a_streamed_update_reaches_its_handler_in_six_calls_of_ours() -> None:
    handler = Handler()
    endpoint = Endpoint(handler, role="client")
    buffer = LineBuffer()

    def read(data: bytes) -> None:
        for line in buffer.feed(data):
            endpoint._dispatch(line)

    read(update_line("warm"))  # binds the decoder and caches the handler
    burst = b"".join(update_line(str(i), f"s{i % 2}") for i in range(10))
    calls = agentao_lines(lambda: read(burst), "call")
    read(update_line("bad").replace(b'"text":"bad"', b'"text": 7'))  # invalid: dropped
    assert handler.seen[1:] == [(f"s{i % 2}", str(i)) for i in range(10)]
    # Per update: _dispatch, receive, _receive_passed (its bytes read straight into types,
    # with no dicts), _on_notification, submit, and the one-argument handler's wrapper
    # (_two_arguments). Per burst: feed and _whole_lines (framing.py). Was 2 + 9 * 10
    # (receive_message, _receive_call, _decode_valid and params_of_line read the line's
    # dicts first), and before that 2 + 17 * 10: _finish_line, _valid_id, _spec_for,
    # _decode_params, _decoder, session_id_of, _find_handler, _notify and a closure.
    assert calls == 2 + 6 * 10
