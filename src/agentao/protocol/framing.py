"""NDJSON framing: bytes in, complete lines out, with a hard cap on line size.

Theory of operation. `LineBuffer.feed()` takes whatever the transport read and
returns the complete lines it now holds, in order. A line longer than
`max_line_bytes` is never held whole: once the pending bytes pass the cap the
buffer switches to *discarding* until the next newline, counting what it threw
away and keeping only the line's first and last `keep_bytes` (where a request's
`"id"` usually is), and then yields one `Oversize` marker in the line's place so
the caller can answer it with that id. Blank lines are skipped; a trailing
`\\r` is dropped so CRLF peers work. Decoding (UTF-8, JSON) is not done here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
# Of a line over the cap, this many bytes from each end are kept (to find its id).
DEFAULT_OVERSIZE_KEEP_BYTES = 4 * 1024


@dataclass(frozen=True, slots=True)
class Oversize:
    """Stands in for a line that was longer than the cap (and was discarded)."""

    size: int
    limit: int
    head: bytes = b""  # the line's first bytes (at most keep_bytes)
    tail: bytes = b""  # its last bytes, `\r` included (at most keep_bytes)


class LineBuffer:
    def __init__(
        self,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        keep_bytes: int = DEFAULT_OVERSIZE_KEEP_BYTES,
    ) -> None:
        self.max_line_bytes = max_line_bytes
        self.keep_bytes = keep_bytes
        self._pending = bytearray()
        self._discarded = 0  # > 0 while skipping the rest of an oversize line
        self._head = b""
        self._tail = b""

    def feed(self, data: bytes) -> list[bytes | Oversize]:
        if type(data) is not bytes:
            return self._feed_each(data, 0)
        out: list[bytes | Oversize] = []
        if self._pending or self._discarded:  # the line a read cut, ended first
            nl = data.find(b"\n")
            if nl < 0:
                self._keep(data, 0, len(data))
                return out
            self._finish_line(data, 0, nl, out)
            data = data[nl + 1 :]
        lines = self._whole_lines(data)
        if lines is None:
            return out + self._feed_each(data, 0)
        return out + lines if out else lines

    def _whole_lines(self, data: bytes) -> list[bytes | Oversize] | None:
        """The common case (nothing held; every line in `data` plain and under the cap)
        with no Python step per line: a streamed answer reads hundreds of updates in one
        chunk. None when any line needs `_feed_each`'s care (CR, blank but not empty,
        over the cap)."""
        if b"\r" in data:  # a CRLF peer: every line goes line by line, so split nothing here
            return None
        lines: list[Any] = data.split(b"\n")
        rest = lines.pop()
        if any(map(bytes.isspace, lines)):
            return None
        if lines and max(map(len, lines)) > self.max_line_bytes:
            return None
        if rest:
            self._keep(data, len(data) - len(rest), len(data))
        return list(filter(None, lines))

    def _feed_each(self, data: bytes, start: int) -> list[bytes | Oversize]:
        out: list[bytes | Oversize] = []
        find, limit = data.find, self.max_line_bytes
        while True:
            nl = find(b"\n", start)
            if nl < 0:
                self._keep(data, start, len(data))
                return out
            if not self._pending and not self._discarded and nl - start <= limit:
                # The common case (a whole line in this chunk), inline: it runs once per
                # streamed update. `_finish_line` is the same with the held bytes.
                line = data[start:nl]
                if line.endswith(b"\r"):
                    line = line[:-1]
                if line and not line.isspace():
                    out.append(line)
            else:
                self._finish_line(data, start, nl, out)
            start = nl + 1

    def flush(self) -> list[bytes | Oversize]:
        """At EOF: the unterminated last line, if any (a peer may omit the final newline)."""
        out: list[bytes | Oversize] = []
        if self._discarded:
            out.append(self._oversize())
        elif self._pending and not self._pending.isspace():
            out.append(bytes(self._pending).rstrip(b"\r"))
        self._pending.clear()
        return out

    @property
    def buffered(self) -> int:
        """Bytes held for an unfinished line: at most the cap, or 2 * keep_bytes when
        discarding an oversize one."""
        return len(self._pending) + len(self._head) + len(self._tail)

    def _keep(self, data: bytes, start: int, end: int) -> None:
        if self._discarded:
            self._discarded += end - start
            self._tail = _last(self._tail, data, start, end, self.keep_bytes)
        elif len(self._pending) + (end - start) > self.max_line_bytes:
            self._start_discarding(data, start, end)
        else:
            self._pending += data[start:end]

    def _start_discarding(self, data: bytes, start: int, end: int) -> None:
        keep, pending = self.keep_bytes, self._pending
        self._discarded = len(pending) + (end - start)
        head = bytes(pending[:keep])
        self._head = head + data[start : min(end, start + keep - len(head))]
        self._tail = _last(bytes(pending[-keep:]) if keep else b"", data, start, end, keep)
        pending.clear()

    def _oversize(self) -> Oversize:
        marker = Oversize(self._discarded, self.max_line_bytes, self._head, self._tail)
        self._discarded, self._head, self._tail = 0, b"", b""
        return marker

    def _finish_line(self, data: bytes, start: int, end: int, out: list) -> None:
        if not self._pending and not self._discarded and end - start <= self.max_line_bytes:
            line = data[start:end]  # fast path: the whole line is in this chunk
        else:
            self._keep(data, start, end)
            if self._discarded:
                out.append(self._oversize())
                return
            line = bytes(self._pending)
            self._pending.clear()
        if line.endswith(b"\r"):
            line = line[:-1]
        if line and not line.isspace():
            out.append(line)


def _last(kept: bytes, data: bytes, start: int, end: int, keep: int) -> bytes:
    """The last `keep` bytes of `kept` followed by data[start:end], without joining more."""
    if keep <= 0:
        return b""
    if end - start >= keep:
        return data[end - keep : end]
    return (kept + data[start:end])[-keep:]


__all__ = ["DEFAULT_MAX_LINE_BYTES", "DEFAULT_OVERSIZE_KEEP_BYTES", "LineBuffer", "Oversize"]
