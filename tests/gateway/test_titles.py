"""Titles a person reads in a list: the newest user words, short, never raw JSON."""

from __future__ import annotations

import pytest

from agentao.gateway.titles import short_title

ROWS = [
    ("write the file", "write the file"),
    ("  two\n\tlines  ", "two lines"),
    ("[System]\nBe brief.\n\nhello there", "hello there"),
    ("[System]\nBe brief.\n\nfirst\n\n[Assistant]\nok\n\nsecond question", "second question"),
    ("[System]", ""),
    (
        '{"task": "summarize the quarterly report", "format": "md"}',
        "summarize the quarterly report",
    ),
    ('{"task": "summarize the quarterly', "summarize the quarterly"),  # a cut first line
    ('[{"role": "user", "content": "hi"}]', "user"),
    ("{}", ""),
    ("", ""),
    (None, ""),
    ("a" * 100, "a" * 39 + "…"),
    (
        "the quick brown fox jumps over the lazy dog, twice",
        "the quick brown fox jumps over the lazy…",
    ),
]


@pytest.mark.parametrize(("text", "title"), ROWS)
def test_short_titles(text: str | None, title: str) -> None:
    assert short_title(text, 40) == title
