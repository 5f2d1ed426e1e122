"""Replays the agent side of a recorded transcript (tests/data/real-agent-transcripts).

    python replay.py TRANSCRIPT.jsonl [--root DIR]

For each request the client sends, find the next recorded client request of
the same method, then write every recorded agent line that followed it, up
to the next recorded client request: responses get the live request's id,
the agent's own requests (ids 0, strings, ...) are sent as recorded and the
replay waits for the client's answer before going on. Recorded paths under
/home/user/project are moved to --root. Each answer the client gave to an
agent request is printed on stderr as `ANSWER <json>`. A second `initialize` (a client
that offered v2 and got the recorded v1 answer initializes again as v1) gets the recorded
answer again, as the recorded agents give it: they answer every `initialize` alike.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from _wire import Wire

RECORDED_ROOT = "/home/user/project"


def load(path: str, root: str | None) -> list[tuple[str, dict[str, Any]]]:
    entries = []
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    for line in lines:
        if root is not None:
            line = line.replace(RECORDED_ROOT, root)
        entry = json.loads(line)
        entries.append((entry["dir"], entry["msg"]))
    return entries


def is_client_call(entry: tuple[str, dict[str, Any]]) -> bool:
    direction, msg = entry
    return direction == "send" and "method" in msg


class Replay:
    def __init__(self, entries: list[tuple[str, dict[str, Any]]]) -> None:
        self.entries = entries
        self.i = 0
        self.wire = Wire()

    def run(self) -> None:
        while (msg := self.wire.read()) is not None:
            if "method" in msg and "id" in msg:
                self.answer(msg)

    def answer(self, msg: dict[str, Any]) -> None:
        j = self.find(msg["method"])
        if j is None and msg["method"] == "initialize":
            j = self.find("initialize", start=0)  # and the replay goes on from there
        if j is None:
            self.wire.error(msg, -32601, f"not in the transcript: {msg['method']}")
            return
        recorded_id = self.entries[j][1]["id"]
        self.i = j + 1
        while self.i < len(self.entries) and not is_client_call(self.entries[self.i]):
            direction, recorded = self.entries[self.i]
            self.i += 1
            if direction == "recv":
                self.emit(recorded, recorded_id, msg["id"])

    def find(self, method: str, start: int | None = None) -> int | None:
        for k in range(self.i if start is None else start, len(self.entries)):
            direction, recorded = self.entries[k]
            if direction == "send" and recorded.get("method") == method and "id" in recorded:
                return k
        return None

    def emit(self, recorded: dict[str, Any], recorded_id: Any, live_id: Any) -> None:
        if "method" not in recorded:  # the answer to the client's request
            if recorded.get("id") == recorded_id:
                recorded = {**recorded, "id": live_id}
            self.wire.send(recorded)
        elif "id" in recorded:  # the agent's own request: wait for the client's answer
            answer = self.wire.call(recorded["id"], recorded["method"], recorded.get("params", {}))
            sys.stderr.write(f"ANSWER {json.dumps({'method': recorded['method'], **answer})}\n")
            sys.stderr.flush()
        else:
            self.wire.send(recorded)


def main(argv: list[str]) -> None:
    root = argv[argv.index("--root") + 1] if "--root" in argv else None
    Replay(load(argv[0], root)).run()


if __name__ == "__main__":
    main(sys.argv[1:])
