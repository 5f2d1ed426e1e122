"""Salvage what a refused line still says: the id to answer, and what is wrong with it.

Theory of operation. Every request deserves exactly one reply carrying its own id, even
one we cannot take. Two kinds of line reach this module, and only on failure, so the
hot path never pays for it:

* A line the fast decoder (msgspec) refused. Some are valid JSON all the same: a string
  with a lone surrogate escape (`"\\ud800"`, which no UTF-8 can carry) or a number no
  float or int holds (`1e400`, 5,000 digits). `parse_refused` parses it again with the
  stdlib `json`, which keeps lone surrogates, and number hooks that keep such a literal
  as a marker instead of failing; one walk then lists each damaged place as a `Damage`
  (path, reason). A line stdlib `json` refuses as well is genuinely not JSON.

* A line too big to hold (or to nest), of which only the first and last few KiB are
  left (`framing.Oversize`). `scan_envelope` reads the top-level members it can see
  whole, without building any value: forward from the head's `{`, skipping nested
  values; and backward from the tail's final `}`, since the member right before the
  closing brace of the outermost object is necessarily a top-level one. It reports
  the id only when the members seen agree on one valid id, and which top-level keys
  it saw, so the connection can tell a request (answer it) from a response (fail our
  own pending request).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

LONE_SURROGATE = "lone surrogate"
NUMBER_OUT_OF_RANGE = "number out of range"

_SURROGATE = re.compile("[\ud800-\udfff]")
_WS = b" \t\r\n"
_SCALAR = frozenset(b"0123456789+-.eEtruefalsn")


@dataclass(frozen=True, slots=True)
class Damage:
    """A place in a parsed message that our decoder, and the wire, cannot carry."""

    path: tuple[str | int, ...]  # from the message root, e.g. ("params", "prompt", 0, "text")
    reason: str  # LONE_SURROGATE | NUMBER_OUT_OF_RANGE

    @property
    def top(self) -> str | int | None:
        """The top-level member it is in ("params", "id", ...)."""
        return self.path[0] if self.path else None

    def where(self, skip: int = 0) -> str:
        """The path as `$.prompt[0].text` (after `skip` leading steps), safe to encode."""
        steps = (f"[{s}]" if isinstance(s, int) else f".{_printable(s)}" for s in self.path[skip:])
        return "$" + "".join(steps)


@dataclass(frozen=True, slots=True)
class Envelope:
    """What the visible ends of a line say about its top-level members."""

    id: int | str | None  # None when no id was seen whole, or the ends disagree
    keys: frozenset[str]

    @property
    def is_response(self) -> bool:
        return "method" not in self.keys and bool(self.keys & {"result", "error"})


# ---- a refused line, parsed again ---------------------------------------------------------


class _BadNumber:
    """Stands in for a number literal no Python float or int holds."""

    __slots__ = ("literal",)

    def __init__(self, literal: str) -> None:
        self.literal = literal


def _float(literal: str) -> Any:
    value = float(literal)
    return value if math.isfinite(value) else _BadNumber(literal)


def _int(literal: str) -> Any:
    try:
        return int(literal)
    except ValueError:  # past sys.int_info's digit limit
        return _BadNumber(literal)


def _constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # stdlib json takes NaN/Infinity; the RFC does not


_decoder = json.JSONDecoder(parse_float=_float, parse_int=_int, parse_constant=_constant)


def parse_refused(line: bytes) -> tuple[Any, list[Damage]] | None:
    """The JSON value of a line msgspec refused, and its damaged places (document order);
    None when the line is not JSON at all (not UTF-8, bad syntax, nested too deeply)."""
    try:
        value = _decoder.decode(line.decode("utf-8"))
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError are ValueErrors
        return None
    return value, list(_damage(value))


def _damage(value: Any) -> Iterator[Damage]:
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            children = list(node.items())
            for key, _ in children:
                if _has_surrogate(key):
                    yield Damage((*path, key), LONE_SURROGATE)
        elif isinstance(node, list):
            children = list(enumerate(node))
        else:
            if isinstance(node, _BadNumber):
                yield Damage(path, NUMBER_OUT_OF_RANGE)
            elif isinstance(node, str) and _has_surrogate(node):
                yield Damage(path, LONE_SURROGATE)
            continue
        stack.extend(((*path, k), v) for k, v in reversed(children))


def _has_surrogate(text: str) -> bool:
    # After decoding, a valid pair is one astral character: any surrogate left is lone.
    return not text.isascii() and _SURROGATE.search(text) is not None


def _printable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def printable(value: Any) -> str:
    """`value` as text that can go on the wire (lone surrogates shown as escapes)."""
    return _printable(value) if isinstance(value, str) else repr(value)


# ---- the visible ends of a line too big to parse ------------------------------------------

_UNREAD = object()  # an "id" key seen, its value cut off


def scan_envelope(head: bytes, tail: bytes) -> Envelope:
    """The id and top-level keys visible in a line's first and last bytes (see above)."""
    ids, keys = _scan_head(head)
    last = _scan_tail(tail)
    if last is not None:
        ids.append(last)
        keys.add("id")
    found = {_key(i) for i in ids}
    if len(found) != 1 or _UNREAD in ids or not _valid_id(ids[0]):
        return Envelope(None, frozenset(keys))
    return Envelope(ids[0], frozenset(keys))


def _key(value: Any) -> tuple[type, Any]:
    return (type(value), value) if value is not _UNREAD else (object, None)


def _valid_id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _scan_head(buf: bytes) -> tuple[list[Any], set[str]]:
    """Walk the top-level members from the `{` on, until the bytes run out."""
    ids: list[Any] = []
    keys: set[str] = set()
    i = _skip_ws(buf, 0)
    if buf[i : i + 1] != b"{":
        return ids, keys
    i += 1
    while True:
        i = _skip_ws(buf, i)
        key_end = _string_end(buf, i)
        if key_end < 0:
            return ids, keys  # the object's end, or cut off inside the key
        key = _json(buf[i:key_end])
        i = _skip_ws(buf, key_end)
        if not isinstance(key, str) or buf[i : i + 1] != b":":
            return ids, keys
        keys.add(key)  # seen even when its value runs past the head
        start = _skip_ws(buf, i + 1)
        end = _value_end(buf, start)
        if key == "id":
            ids.append(_json(buf[start:end]) if end > 0 else _UNREAD)
        i = _skip_ws(buf, end) if end > 0 else len(buf)
        if buf[i : i + 1] != b",":
            return ids, keys
        i += 1


def _scan_tail(buf: bytes) -> Any:
    """The value of an `"id"` member just before the final `}`, or None."""
    end = len(buf.rstrip(_WS))
    if buf[end - 1 : end] != b"}":
        return None
    value_end = len(buf[: end - 1].rstrip(_WS))
    value_start = _token_start(buf, value_end)
    colon = len(buf[:value_start].rstrip(_WS))
    if value_start <= 0 or buf[colon - 1 : colon] != b":":
        return None
    key_end = len(buf[: colon - 1].rstrip(_WS))
    key_start = _string_start(buf, key_end)
    before = len(buf[:key_start].rstrip(_WS))
    if key_start <= 0 or buf[before - 1 : before] not in (b",", b"{"):
        return None
    if _json(buf[key_start:key_end]) != "id":
        return None
    value = _json(buf[value_start:value_end])
    return value if value is None or _valid_id(value) else _UNREAD


def _skip_ws(buf: bytes, i: int) -> int:
    while i < len(buf) and buf[i] in _WS:
        i += 1
    return i


def _string_end(buf: bytes, i: int) -> int:
    """Index past the string starting at buf[i] (a quote), or -1 if it is cut off."""
    if buf[i : i + 1] != b'"':
        return -1
    j = i + 1
    while (j := buf.find(b'"', j)) >= 0:
        if _escaped(buf, j, i + 1):
            j += 1
            continue
        return j + 1
    return -1


def _string_start(buf: bytes, end: int) -> int:
    """Index of the opening quote of the string ending at buf[end - 1], or -1."""
    if end <= 0 or buf[end - 1 : end] != b'"':
        return -1
    j = end - 1
    while (j := buf.rfind(b'"', 0, j)) >= 0:
        run = _backslashes(buf, j, 0)
        if run == j:  # the run reaches the cut: cannot tell
            return -1
        if run % 2 == 0:
            return j
    return -1


def _escaped(buf: bytes, quote: int, floor: int) -> bool:
    return _backslashes(buf, quote, floor) % 2 == 1


def _backslashes(buf: bytes, i: int, floor: int) -> int:
    n = 0
    while i - n - 1 >= floor and buf[i - n - 1] == 0x5C:  # backslash
        n += 1
    return n


def _token_start(buf: bytes, end: int) -> int:
    """Start of the scalar (string, number, literal) ending at buf[end - 1], or -1; a
    token reaching the start of the buffer may be cut off, so it is -1 too."""
    if buf[end - 1 : end] == b'"':
        return _string_start(buf, end)
    i = end
    while i > 0 and buf[i - 1] in _SCALAR:
        i -= 1
    return i if 0 < i < end else -1


def _value_end(buf: bytes, i: int) -> int:
    """Index past the JSON value starting at buf[i], or -1 when it runs past the buffer."""
    first = buf[i : i + 1]
    if first == b'"':
        return _string_end(buf, i)
    if first in (b"{", b"["):
        return _container_end(buf, i)
    j = i
    while j < len(buf) and buf[j] in _SCALAR:
        j += 1
    return j if i < j < len(buf) else -1  # a scalar touching the end may be cut


_STRUCTURAL = re.compile(rb'["\[\]{}]')


def _container_end(buf: bytes, i: int) -> int:
    depth = 0
    for match in _STRUCTURAL.finditer(buf, i):
        j = match.start()
        if j < i:
            continue
        char = buf[j : j + 1]
        if char == b'"':
            end = _string_end(buf, j)
            if end < 0:
                return -1
            i = end  # resume after the string (finditer keeps going: skip what it yields)
            continue
        depth += 1 if char in (b"{", b"[") else -1
        if depth == 0:
            return j + 1
    return -1


def _json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return _UNREAD


__all__ = [
    "LONE_SURROGATE",
    "NUMBER_OUT_OF_RANGE",
    "Damage",
    "Envelope",
    "parse_refused",
    "printable",
    "scan_envelope",
]
