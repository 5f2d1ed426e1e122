"""The permission policy as a table: options offered, policy -> option picked."""

from __future__ import annotations

import pytest

from agentao.client.config import ClientPolicy
from agentao.client.permissions import (
    PermissionAnswer,
    PermissionOption,
    PermissionRequest,
    PolicyPermissions,
    choose,
    parse_options,
)

ALL = (
    PermissionOption("aa", "Always", "allow_always"),
    PermissionOption("a", "Allow", "allow_once"),
    PermissionOption("r", "Reject", "reject_once"),
    PermissionOption("rr", "Never", "reject_always"),
)
ONLY_ALWAYS = (
    PermissionOption("aa", "Always", "allow_always"),
    PermissionOption("rr", "Never", "reject_always"),
)
NO_REJECT = (PermissionOption("a", "Allow", "allow_once"),)


@pytest.mark.parametrize(
    ("options", "allow", "remember", "expected"),
    [
        (ALL, True, False, "a"),
        (ALL, False, False, "r"),
        (ALL, True, True, "a"),  # once is still preferred; always only when nothing else
        (ONLY_ALWAYS, True, False, None),  # never an *_always unless configured
        (ONLY_ALWAYS, False, False, None),
        (ONLY_ALWAYS, True, True, "aa"),
        (ONLY_ALWAYS, False, True, "rr"),
        (NO_REJECT, False, False, None),  # no reject option -> cancelled
        ((), True, True, None),
    ],
)
def test_choose(options, allow, remember, expected):
    assert choose(options, allow=allow, remember=remember) == expected


def request(kind: str, options=ALL) -> PermissionRequest:
    return PermissionRequest("s", "t", "title", kind, options)


@pytest.mark.parametrize(
    ("approve", "kind", "expected"),
    [
        ("none", "read", "r"),
        ("none", "edit", "r"),
        ("reads", "read", "a"),
        ("reads", "search", "a"),
        ("reads", "think", "a"),
        ("reads", "edit", "r"),
        ("reads", "execute", "r"),
        ("reads", "other", "r"),
        ("all", "execute", "a"),
        ("all", "delete", "a"),
    ],
)
async def test_policy(approve, kind, expected):
    answer = await PolicyPermissions(ClientPolicy(approve=approve))(request(kind))
    assert answer.option_id == expected
    # A rejection says why, in words the person and the model both get; an approval needs none.
    if expected == "r":
        assert answer.reason == (
            "the client's policy approves no tool calls"
            if approve == "none"
            else f"the client's policy approves only read and search tools, not {kind}"
        )
    else:
        assert answer.reason == ""


async def test_ask_uses_the_callback():
    seen = []

    async def ask(req):
        seen.append(req.title)
        return "aa"

    handler = PolicyPermissions(ClientPolicy(approve="ask"), ask=ask)
    assert await handler(request("edit")) == "aa"
    assert seen == ["title"]


async def test_ask_without_a_terminal_rejects(monkeypatch):
    monkeypatch.setattr("sys.stdin.isatty", lambda: False)
    answer = await PolicyPermissions(ClientPolicy(approve="ask"))(request("read"))
    assert answer == PermissionAnswer("r", "no one to ask: the client has no terminal")


def test_parse_options_skips_malformed_items():
    raw = [
        {"optionId": "a", "name": "Allow", "kind": "allow_once"},
        {"name": "no id"},
        "junk",
        {"optionId": "x", "kind": 7},
    ]
    assert parse_options(raw) == (
        PermissionOption("a", "Allow", "allow_once"),
        PermissionOption("x", "", ""),
    )
    assert parse_options(None) == ()
