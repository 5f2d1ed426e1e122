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
    buffer = LineBuffer(max_line_bytes=10, keep_bytes=3)
    out = feed_all(buffer, [b"12345", b"67890abc", b"def\nok\n"])
    assert out == [Oversize(16, 10, b"123", b"def"), b"ok"]


def test_oversize_line_is_never_buffered_beyond_the_cap() -> None:
    buffer = LineBuffer(max_line_bytes=1000, keep_bytes=100)
    peak = 0
    for i in range(10_000):  # a 10 MB line, 1 KB at a time
        assert buffer.feed(b"%04d" % i + b"x" * 996) == []
        peak = max(peak, buffer.buffered)
    assert peak <= 1000 + 2 * 100  # the cap, or the two kept ends while discarding
    [marker] = buffer.feed(b"end\n")
    assert (marker.size, marker.limit) == (10_000_003, 1000)
    assert marker.head == b"0000" + b"x" * 96
    assert marker.tail == b"x" * 97 + b"end"


def test_oversize_in_one_chunk_then_normal_line() -> None:
    buffer = LineBuffer(max_line_bytes=4, keep_bytes=2)
    assert buffer.feed(b"123456789\nabc\n") == [Oversize(9, 4, b"12", b"89"), b"abc"]


@pytest.mark.parametrize("size", [1, 3, 5, 8, 13])
def test_oversize_ends_survive_any_chunking(size: int) -> None:
    line = b'{"id":1,' + b"x" * 50 + b',"end":2}\r'
    chunks = [line[i : i + size] for i in range(0, len(line), size)] + [b"\n"]
    [marker] = feed_all(LineBuffer(max_line_bytes=20, keep_bytes=8), chunks)
    assert marker == Oversize(len(line), 20, line[:8], line[-8:])


def test_line_exactly_at_cap_is_kept() -> None:
    assert LineBuffer(max_line_bytes=4).feed(b"1234\n") == [b"1234"]


def test_unterminated_oversize_at_eof() -> None:
    buffer = LineBuffer(max_line_bytes=4, keep_bytes=2)
    assert buffer.feed(b"123456") == []
    assert buffer.flush() == [Oversize(6, 4, b"12", b"56")]


def one_line_at_a_time(buffer: LineBuffer, chunks: list[bytes]) -> list[bytes | Oversize]:
    """What `feed` gives when each line goes through `_feed_each` (no whole-chunk split)."""
    out: list[bytes | Oversize] = []
    for chunk in chunks:
        out += buffer._feed_each(chunk, 0)
    return out + buffer.flush()


@pytest.mark.parametrize("seed", range(40))
def test_a_chunk_split_whole_gives_what_line_by_line_gives(seed: int) -> None:
    """`feed` splits a chunk's whole lines in one C call (`_whole_lines`); whatever
    the lines (CRLF, blank, spaces, over the cap, cut anywhere), the same lines come out
    as taking them one by one."""
    import random

    rng = random.Random(seed)
    pieces = [b'{"a":1}', b'{"text":"' + b"x" * 30 + b'"}', b"", b"  ", b"\t", b"y" * 70]
    data = b"".join(
        rng.choice(pieces) + rng.choice([b"\n", b"\n", b"\n", b"\r\n"]) for _ in range(60)
    )
    cuts = sorted(rng.sample(range(1, len(data)), 8))
    chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
    expected = one_line_at_a_time(LineBuffer(max_line_bytes=64, keep_bytes=4), chunks)
    assert feed_all(LineBuffer(max_line_bytes=64, keep_bytes=4), chunks) == expected
    assert any(isinstance(line, Oversize) for line in expected)


def test_a_chunk_of_plain_lines_is_split_with_no_python_step_per_line() -> None:
    from tests.gateway.test_relay_cost import agentao_lines

    few = b'{"a":1}\n' * 10 + b'{"b":'
    many = b'{"a":1}\n' * 1_000 + b'{"b":'
    assert agentao_lines(lambda: LineBuffer().feed(few)) == agentao_lines(
        lambda: LineBuffer().feed(many)
    )
    buffer = LineBuffer()
    assert buffer.feed(many) == [b'{"a":1}'] * 1_000 and buffer.buffered == len(b'{"b":')
    # A chunk that first ends the line the last read cut: the rest split whole too.
    assert agentao_lines(lambda: buffer.feed(b"2}\n" + few)) == agentao_lines(
        lambda: buffer.feed(b"2}\n" + many)
    )
