"""A v2 agent's streamed text reaches the client's typed events decoded once (client/v2.py).

The endpoint decodes each v2 `session/update` into its v2 struct; a text chunk (the
hot path of a relay: `bench/versions.py`) then becomes v1's struct from that one, with
no second decode of the wire dict. Counted with a profile hook (msgspec's `convert`
calls), not timed. The controls: the event is the one the decode gives, and a chunk
the fast way does not cover (annotated) still decodes.
"""

from __future__ import annotations

import sys
from types import FrameType
from typing import Any

import msgspec

from agentao.client.state import SessionState
from agentao.client.v2 import decode_v1, fold_update
from agentao.protocol.decode import decode_lenient
from agentao.protocol.v2 import schema as v2
from agentao.protocol.v2.from_v1 import chunk


def _decoded(raw: dict[str, Any]) -> Any:
    """The v2 struct the endpoint hands `session_update` for `raw`."""
    note = decode_lenient(v2.UpdateSessionNotification, {"sessionId": "s", "update": raw})
    return note.update


def _converts(action: Any) -> tuple[int, Any]:
    """How many times `action` calls msgspec's convert, and what it returned."""
    calls = 0

    def profiler(_frame: FrameType, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "c_call" and arg is msgspec.convert:
            calls += 1

    sys.setprofile(profiler)
    try:
        result = action()
    finally:
        sys.setprofile(None)
    return calls, result


def test_a_v2_text_chunk_folds_with_no_second_decode() -> None:
    for kind in ("agent_message_chunk", "agent_thought_chunk", "user_message_chunk"):
        raw = chunk(kind, "m1", "tick ")
        value = _decoded(raw)
        st = SessionState("s", 100)
        wire = msgspec.Raw(msgspec.json.encode(raw))  # the bytes received
        calls, update = _converts(lambda: fold_update(st, raw, value, wire))  # noqa: B023
        assert calls == 0, kind
        assert update.kind == kind and update.wire is wire and update.raw == raw
        assert update.value == decode_v1("s", raw)  # what the decode gives


def test_an_annotated_chunk_still_decodes() -> None:
    raw = chunk("agent_message_chunk", "m1", "tick ")
    raw["content"] = {**raw["content"], "annotations": {"priority": 0.5}}
    value, st = _decoded(raw), SessionState("s", 100)
    calls, update = _converts(lambda: fold_update(st, raw, value))
    assert calls >= 1
    assert update.value == decode_v1("s", raw)
    assert update.value.content.annotations.priority == 0.5
