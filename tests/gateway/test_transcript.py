"""Which messages of a Chat Completions transcript are new, by hashed prefixes."""

from __future__ import annotations

from agentao.gateway.transcript import (
    ChatMessage,
    candidate_prefixes,
    chain,
    render,
    tail_after_last_answer,
    transcript_hash,
)

U1, A1, U2 = (
    ChatMessage("user", "hi"),
    ChatMessage("assistant", "hello"),
    ChatMessage("user", "more"),
)


def test_a_stored_answer_is_found_as_a_prefix_of_the_next_request() -> None:
    stored = transcript_hash([U1], "hello")
    assert candidate_prefixes([U1, A1, U2]) == [(stored, 2)]


def test_prefixes_are_compared_by_role_and_trimmed_text() -> None:
    assert chain([ChatMessage("assistant", "hello\n")]) == chain(
        [ChatMessage("assistant", " hello")]
    )
    assert chain([ChatMessage("user", "hello")]) != chain([ChatMessage("assistant", "hello")])
    with_image = ChatMessage("user", "hi", (("image/png", "AAAA"),))
    assert chain([with_image]) != chain([U1])


def test_longest_prefix_first_and_only_those_ending_with_an_answer() -> None:
    messages = [U1, A1, U2, ChatMessage("assistant", "again"), ChatMessage("user", "x")]
    lengths = [length for _digest, length in candidate_prefixes(messages)]
    assert lengths == [4, 2]


def test_tail_after_last_answer_and_render() -> None:
    assert tail_after_last_answer([U1, A1, U2]) == [U2]
    assert tail_after_last_answer([U1, U2]) == [U1, U2]
    assert render([U1], history=False) == "hi"
    system = ChatMessage("system", "be brief")
    assert (
        render([system, U1, A1, U2], history=True)
        == "[System]\nbe brief\n\nhi\n\n[Assistant]\nhello\n\nmore"
    )
