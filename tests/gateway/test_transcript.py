"""Which messages of a Chat Completions transcript are new, by hashed prefixes."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from agentao.gateway.transcript import (
    ChatMessage,
    chain,
    hash_transcript,
    render,
    tail_after_last_answer,
)

U1, A1, U2 = (
    ChatMessage("user", "hi"),
    ChatMessage("assistant", "hello"),
    ChatMessage("user", "more"),
)


def test_a_stored_answer_is_found_as_a_prefix_of_the_next_request() -> None:
    stored = hash_transcript([U1], depth=8).answered("hello")
    assert hash_transcript([U1, A1, U2], depth=8).candidates == [(stored, 2)]
    assert stored == chain([U1, A1])[-1]


def test_prefixes_are_compared_by_role_and_trimmed_text() -> None:
    assert chain([ChatMessage("assistant", "hello\n")]) == chain(
        [ChatMessage("assistant", " hello")]
    )
    assert chain([ChatMessage("user", "hello")]) != chain([ChatMessage("assistant", "hello")])
    with_image = ChatMessage("user", "hi", (("image/png", "AAAA"),))
    assert chain([with_image]) != chain([U1])


def test_longest_prefix_first_only_those_ending_with_an_answer_and_bounded() -> None:
    messages = [U1, A1, U2, ChatMessage("assistant", "again"), ChatMessage("user", "x")]
    lengths = [length for _digest, length in hash_transcript(messages, depth=8).candidates]
    assert lengths == [4, 2]
    assert [length for _d, length in hash_transcript(messages, depth=1).candidates] == [4]


def test_tail_after_last_answer_and_render() -> None:
    assert tail_after_last_answer([U1, A1, U2]) == [U2]
    assert tail_after_last_answer([U1, U2]) == [U1, U2]
    assert render([U1], history=False) == "hi"
    system = ChatMessage("system", "be brief")
    assert (
        render([system, U1, A1, U2], history=True)
        == "[System]\nbe brief\n\nhi\n\n[Assistant]\nhello\n\nmore"
    )


# SQLite's: the trace hook holds the statement on the store's own thread. (PostgreSQL's
# queries are awaited on the event loop, where a blocking hook would stop everything.)
@pytest.mark.parametrize("gateway_store", ["sqlite"], indirect=True)
def test_a_huge_transcript_holds_up_no_other_caller(gateway_factory) -> None:
    """A 100k-message request's lookup is held on the store (a trace callback blocks its
    statement); meanwhile another caller's request runs to its end. Then the big one goes
    on, and its lookup was one statement."""
    gw = gateway_factory()
    entered, release = threading.Event(), threading.Event()
    lookups: list[str] = []

    def hold(sql: str) -> None:  # runs on the store thread that executes `sql`
        if "transcript_hash" in sql and sql.lstrip().upper().startswith("SELECT"):
            lookups.append(sql)
            entered.set()
            release.wait()

    huge = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(100_000)
    ] + [{"role": "user", "content": "and now?"}]
    big: dict[str, Any] = {}

    def send_big() -> None:
        with gw.http() as http:
            big["reply"] = http.post(
                "/v1/chat/completions", json={"model": "agentao", "messages": huge}, timeout=60
            )

    gw.gateway.store.db.trace(hold)
    sender = threading.Thread(target=send_big)
    sender.start()
    try:
        entered.wait()  # the big request is in its lookup, and the lookup is held
        small = gw.openai().chat.completions.create(
            model="agentao", messages=[{"role": "user", "content": "hi"}]
        )
        assert small.choices[0].message.content == "Answer one."
        assert not release.is_set() and "reply" not in big  # it finished first
    finally:
        release.set()
        sender.join()
        gw.gateway.store.db.trace(None)
    assert big["reply"].status_code == 200, big["reply"].text
    assert len(lookups) == 1  # 50,000 assistant messages, one query
