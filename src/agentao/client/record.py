"""`--record FILE`: every message both ways, as JSONL, tapped at the transport.

One line per message, the same shape as tests/data/real-agent-transcripts:
`{"t": seconds since start, "dir": "send" | "recv", "msg": the JSON-RPC message}`.
A line that is not JSON is kept as `"raw"` text instead of `"msg"`, so a
recording shows exactly what crossed the pipe. The taps wrap the reader and
writer the endpoint uses, so nothing above the transport can forget to log.
"""

from __future__ import annotations

import time
from typing import IO, Any

import msgspec

from agentao.protocol.endpoint import Reader, Writer

_decode = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode


class Recorder:
    """Appends messages to a JSONL file (flushed per line, so a crash keeps the log)."""

    def __init__(self, file: IO[bytes]) -> None:
        self._file = file
        self._start = time.monotonic()

    @classmethod
    def open(cls, path: str) -> Recorder:
        return cls(open(path, "wb"))  # closed by close()

    def record(self, direction: str, line: bytes) -> None:
        entry: dict[str, Any] = {"t": round(time.monotonic() - self._start, 3), "dir": direction}
        try:
            entry["msg"] = _decode(line)
        except (msgspec.DecodeError, UnicodeDecodeError):
            entry["raw"] = line.decode("utf-8", "replace")
        self._file.write(_encode(entry) + b"\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()


class _Lines:
    """Splits a byte stream into lines for the recorder (the endpoint does its own framing)."""

    def __init__(self, recorder: Recorder, direction: str) -> None:
        self.recorder = recorder
        self.direction = direction
        self._pending = b""

    def feed(self, data: bytes) -> None:
        if not data:
            if self._pending.strip():
                self.recorder.record(self.direction, self._pending)
            self._pending = b""
            return
        *lines, self._pending = (self._pending + data).split(b"\n")
        for line in lines:
            if line.strip():
                self.recorder.record(self.direction, line.rstrip(b"\r"))


class RecordingReader:
    def __init__(self, inner: Reader, recorder: Recorder) -> None:
        self._inner = inner
        self._lines = _Lines(recorder, "recv")

    async def read(self, n: int = -1) -> bytes:
        data = await self._inner.read(n)
        self._lines.feed(data)
        return data


class RecordingWriter:
    def __init__(self, inner: Writer, recorder: Recorder) -> None:
        self._inner = inner
        self._lines = _Lines(recorder, "send")

    def write(self, data: bytes) -> None:
        if data:
            self._lines.feed(data)
        self._inner.write(data)

    async def drain(self) -> None:
        await self._inner.drain()

    def __getattr__(self, name: str) -> Any:  # close(), is_closing(), ... of the real writer
        return getattr(self._inner, name)


__all__ = ["Recorder", "RecordingReader", "RecordingWriter"]
