"""salvage.py: what a refused or oversize line still says, as data rows."""

from __future__ import annotations

import json

import pytest

from agentao.protocol.salvage import (
    LONE_SURROGATE,
    NUMBER_OUT_OF_RANGE,
    parse_refused,
    scan_envelope,
)

X = "x" * 64  # the discarded middle of a line stands between head and tail

# (name, head, tail, id expected, keys that must be seen)
ENVELOPES = [
    (
        "id first",
        '{"jsonrpc":"2.0","id":5,"method":"m","params":{"t":"' + X,
        X + '"}}',
        5,
        {"method", "params"},
    ),
    (
        "string id last",
        '{"jsonrpc":"2.0","method":"m","params":"' + X,
        X + '","id":"abc"}\r',
        "abc",
        {"method"},
    ),
    (
        "spaces around the last id",
        '{"method":"m","params":"' + X,
        X + '" , "id" : 12 }  ',
        12,
        {"method"},
    ),
    ("head and tail agree", '{"id":3,"method":"m","p":"' + X, X + '","id":3}', 3, {"id"}),
    ("head and tail disagree", '{"id":1,"method":"m","p":"' + X, X + '","id":2}', None, {"id"}),
    (
        "id only inside params",
        '{"method":"m","params":{"id":3,"t":"' + X,
        X + '"}}',
        None,
        {"params"},
    ),
    (
        "id as the last nested member",
        '{"method":"m","params":{"t":"' + X,
        X + '","id":5}}',
        None,
        {"method"},
    ),
    (
        "fake id inside strings",
        '{"method":"m","params":"' + X,
        X + '\\",\\"id\\":5","n":"\\"id\\":9"}',
        None,
        {"method"},
    ),
    (
        "escaped backslash before the quote",
        '{"method":"m","p":"' + X,
        X + '\\\\","id":12}',
        12,
        {"method"},
    ),
    ("head cut inside the id", '{"id":123', "", None, {"id"}),
    ("string id cut in the head", '{"id":"ab', "", None, {"id"}),
    ("float id", '{"id":1.5,"method":"m","p":"' + X, X + '"}', None, {"id"}),
    ("bool id", '{"id":true,"method":"m","p":"' + X, X + '"}', None, {"id"}),
    ("null id", '{"id":null,"method":"m","p":"' + X, X + '"}', None, {"id"}),
    ("a response", '{"jsonrpc":"2.0","id":7,"result":{"content":"' + X, X + '"}}', 7, {"result"}),
    ("not an object", '"' + X, X + '"', None, set()),
    (
        "nested values skipped",
        '{"a":{"b":[1,{"c":"}"}]},"id":4,"params":[' + X,
        X + "]}",
        4,
        {"a", "params"},
    ),
]


@pytest.mark.parametrize(
    ("head", "tail", "expected", "keys"), [r[1:] for r in ENVELOPES], ids=[r[0] for r in ENVELOPES]
)
def test_scan_envelope(head: str, tail: str, expected, keys: set[str]) -> None:
    found = scan_envelope(head.encode(), tail.encode())
    assert found.id == expected and type(found.id) is type(expected)
    assert keys <= found.keys


def test_a_response_is_told_from_a_request() -> None:
    assert scan_envelope(b'{"id":7,"result":{"c":"' + b"x" * 9, b'"}}').is_response
    assert not scan_envelope(b'{"id":7,"method":"m","params":"' + b"x" * 9, b'"}').is_response


# (line, [(where, reason)]); None: the line is not JSON at all
REFUSED = [
    ('{"a":"\\ud800"}', [("$.a", LONE_SURROGATE)]),
    ('{"a":["ok","x\\udfffy"]}', [("$.a[1]", LONE_SURROGATE)]),
    ('{"\\ud800":1}', [("$.\\ud800", LONE_SURROGATE)]),
    ('{"a":"\\ud83d\\ude00"}', []),  # a valid pair is not damage
    ('{"a":1e400}', [("$.a", NUMBER_OUT_OF_RANGE)]),
    ('{"a":-1e400}', [("$.a", NUMBER_OUT_OF_RANGE)]),
    ('{"a":' + "9" * 5000 + "}", [("$.a", NUMBER_OUT_OF_RANGE)]),
    ('{"a":1e-400}', []),  # underflow is 0.0, a number like any other
    ('{"a":NaN}', None),
    ('{"a":Infinity}', None),
    ("{bad", None),
    ("[" * 100_000, None),
]


@pytest.mark.parametrize(("line", "expected"), REFUSED, ids=[r[0][:30] for r in REFUSED])
def test_parse_refused(line: str, expected) -> None:
    parsed = parse_refused(line.encode())
    if expected is None:
        assert parsed is None
        return
    _value, damage = parsed
    assert [(d.where(), d.reason) for d in damage] == expected
    json.dumps([d.where() for d in damage], ensure_ascii=False).encode()  # writable on the wire


def test_invalid_utf8_is_not_json() -> None:
    assert parse_refused(b'{"a":"\xff"}') is None
