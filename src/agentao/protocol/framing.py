"""NDJSON framing: bytes in, complete lines out, with a hard cap on line size.

Theory of operation. `LineBuffer.feed()` takes whatever the transport read and
returns the complete lines it now holds, in order. A line longer than
`max_line_bytes` is never held whole: once the pending bytes pass the cap the
buffer switches to *discarding* until the next newline, counting what it threw
away, and then yields one `Oversize` marker in the line's place so the caller
can answer it. Blank lines are skipped; a trailing `\\r` is dropped so CRLF
peers work. Decoding (UTF-8, JSON) is not done here.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Oversize:
    """Stands in for a line that was longer than the cap (and was discarded)."""

    size: int
    limit: int


class LineBuffer:
    def __init__(self, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> None:
        self.max_line_bytes = max_line_bytes
        self._pending = bytearray()
        self._discarded = 0  # > 0 while skipping the rest of an oversize line

    def feed(self, data: bytes) -> list[bytes | Oversize]:
        out: list[bytes | Oversize] = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            if nl < 0:
                self._keep(data, start, len(data))
                return out
            self._finish_line(data, start, nl, out)
            start = nl + 1

    def flush(self) -> list[bytes | Oversize]:
        """At EOF: the unterminated last line, if any (a peer may omit the final newline)."""
        out: list[bytes | Oversize] = []
        if self._discarded:
            out.append(Oversize(self._discarded, self.max_line_bytes))
        elif self._pending and not self._pending.isspace():
            out.append(bytes(self._pending).rstrip(b"\r"))
        self._pending.clear()
        self._discarded = 0
        return out

    @property
    def buffered(self) -> int:
        """Bytes held for an unfinished line (never more than the cap)."""
        return len(self._pending)

    def _keep(self, data: bytes, start: int, end: int) -> None:
        if self._discarded:
            self._discarded += end - start
        elif len(self._pending) + (end - start) > self.max_line_bytes:
            self._discarded = len(self._pending) + (end - start)
            self._pending.clear()
        else:
            self._pending += data[start:end]

    def _finish_line(self, data: bytes, start: int, end: int, out: list) -> None:
        if not self._pending and not self._discarded and end - start <= self.max_line_bytes:
            line = data[start:end]  # fast path: the whole line is in this chunk
        else:
            self._keep(data, start, end)
            if self._discarded:
                out.append(Oversize(self._discarded, self.max_line_bytes))
                self._discarded = 0
                return
            line = bytes(self._pending)
            self._pending.clear()
        if line.endswith(b"\r"):
            line = line[:-1]
        if line and not line.isspace():
            out.append(line)


__all__ = ["DEFAULT_MAX_LINE_BYTES", "LineBuffer", "Oversize"]
