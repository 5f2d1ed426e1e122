"""LineBuffer: lines out of arbitrary chunks, and an oversize line never held whole."""

from __future__ import annotations

import pytest

from agentao.protocol.framing import LineBuffer, Oversize


def feed_all(buffer: LineBuffer, chunks: list[bytes]) -> list[bytes | Oversize]:
    out: list[bytes | Oversize] = []
    for chunk in chunks:
        out += buffer.feed(chunk)
    return out + buffer.flush()


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_lines_survive_any_chunking(size: int) -> None:
    data = b'{"a":1}\n{"b":2}\r\n\n  \n{"c":3}'
    chunks = [data[i : i + size] for i in range(0, len(data), size)]
    assert feed_all(LineBuffer(), chunks) == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


def test_oversize_line_is_discarded_and_counted() -> None:
    buffer = LineBuffer(max_line_bytes=10)
    out = feed_all(buffer, [b"12345", b"67890abc", b"def\nok\n"])
    assert out == [Oversize(16, 10), b"ok"]


def test_oversize_line_is_never_buffered_beyond_the_cap() -> None:
    buffer = LineBuffer(max_line_bytes=1000)
    peak = 0
    for _ in range(10_000):  # a 10 MB line, 1 KB at a time
        assert buffer.feed(b"x" * 1000) == []
        peak = max(peak, buffer.buffered)
    assert peak <= 1000
    assert buffer.feed(b"\n") == [Oversize(10_000_000, 1000)]


def test_oversize_in_one_chunk_then_normal_line() -> None:
    buffer = LineBuffer(max_line_bytes=4)
    assert buffer.feed(b"123456789\nabc\n") == [Oversize(9, 4), b"abc"]


def test_line_exactly_at_cap_is_kept() -> None:
    assert LineBuffer(max_line_bytes=4).feed(b"1234\n") == [b"1234"]


def test_unterminated_oversize_at_eof() -> None:
    buffer = LineBuffer(max_line_bytes=4)
    assert buffer.feed(b"123456") == []
    assert buffer.flush() == [Oversize(6, 4)]
