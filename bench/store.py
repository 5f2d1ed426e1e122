"""The stores (the gateway's, the agent's sessions): SQLite vs PostgreSQL, op by op.

    python bench/store.py [--runs 200] [--url postgresql://...]

Not a test: numbers only. Each operation runs --runs times on each store, one after
another on one event loop (latency, not throughput), and the table gives p50 and p99
in milliseconds and PostgreSQL's p50 over SQLite's. SQLite is a fresh file in a temp
directory (WAL, two readers, as `agentao serve` opens it). PostgreSQL is --url, or,
without one, a throwaway cluster on 127.0.0.1 started as the tests start theirs
(tests/postgres.py: fsync off, so commits cost what the server does, not the disk).

Operations: create a conversation; put a response (an upsert); append 100 task events
in one call (one transaction, frames batched to a row); read them back
(`events_after`); find a conversation by transcript hash among 32 hashes. The agent's
session store: create a session; commit a turn (a typical turn's payload, ~5 KB, with
the session's state, one transaction); read a 20-turn session's turns back (what
`session/load` does).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests.postgres

from agentao.store.gateway import GatewayStore, open_store
from agentao.store.gateway_records import Conversation, ResponseRecord, TaskEvent, TaskRecord
from agentao.store.sessions import SessionRecord, SessionStore, TurnRecord, open_session_store
from agentao.store.target import shown

EVENTS_PER_APPEND = 100
HASHES_PER_LOOKUP = 32  # the gateway's default transcript_match_depth
CHUNKS_PER_TURN = 100  # text chunks in a benched turn's payload
HISTORY_TURNS = 20  # turns of the session read back

Op = Callable[[int], Awaitable[object]]


def operations(store: GatewayStore) -> dict[str, Op]:
    async def create(i: int) -> None:
        await store.create_conversation(
            Conversation(f"c{i}", "bench", "agentao", "chat", transcript_hash=f"h{i}")
        )

    async def put_response(i: int) -> None:
        body = {"id": f"r{i}", "status": "completed", "output": [{"text": "x" * 200}]}
        await store.put_response(ResponseRecord(f"r{i}", f"c{i}", 0, "completed", body))

    async def append(i: int) -> None:
        task = TaskRecord(f"t{i}", f"c{i}", "running", prompt="hello")
        events = [
            TaskEvent(f"t{i}", n, "task-running", float(n), {"update": {"text": "chunk "}})
            for n in range(1, EVENTS_PER_APPEND + 1)
        ]
        await store.append_events(events, tasks=[task])

    async def events_after(i: int) -> None:
        assert len(await store.events_after(f"t{i}", 0)) == EVENTS_PER_APPEND

    async def find(i: int) -> None:
        hashes = [f"miss{i}-{n}" for n in range(HASHES_PER_LOOKUP - 1)] + [f"h{i}"]
        assert await store.find_by_transcript("bench", "agentao", hashes) is not None

    return {
        "create conversation": create,
        "put response": put_response,
        f"append {EVENTS_PER_APPEND} events": append,
        "events_after (100)": events_after,
        f"find_by_transcript ({HASHES_PER_LOOKUP} hashes)": find,
    }


def a_turn(i: int) -> TurnRecord:
    events = [{"kind": "text", "text": f"chunk {n} "} for n in range(CHUNKS_PER_TURN)]
    messages = [{"role": "user", "content": f"prompt {i}"}, {"role": "assistant", "content": "x"}]
    return TurnRecord({"prompt": f"prompt {i}", "messages": messages, "events": events}, "end_turn")


def session_operations(store: SessionStore) -> dict[str, Op]:
    state = {"mode": "workspace-write", "model": "m", "meta": {"permissions": {"grants": []}}}

    async def create(i: int) -> None:
        await store.create(SessionRecord(f"s{i}", "/work", state=state))

    async def commit(i: int) -> None:
        await store.commit_turn(f"s{i}", a_turn(i), state, title=f"prompt {i}")

    async def turns(i: int) -> None:
        assert len(await store.turns("history")) == HISTORY_TURNS

    return {
        "session: create": create,
        "session: commit_turn": commit,
        f"session: turns ({HISTORY_TURNS})": turns,
    }


async def timed(ops: dict[str, Op], runs: int) -> dict[str, list[float]]:
    """Milliseconds per call, per operation (each operation on rows the earlier made)."""
    timings: dict[str, list[float]] = {}
    for name, op in ops.items():
        samples = []
        for i in range(runs):
            start = time.perf_counter()
            await op(i)
            samples.append((time.perf_counter() - start) * 1000)
        timings[name] = samples
    return timings


async def measure(store: GatewayStore, sessions: SessionStore, runs: int) -> dict[str, list[float]]:
    timings = await timed(operations(store), runs)
    await sessions.create(SessionRecord("history", "/work"))
    for n in range(HISTORY_TURNS):  # untimed: the session `turns` reads
        await sessions.commit_turn("history", a_turn(n), {})
    timings |= await timed(session_operations(sessions), runs)
    await store.close()
    await sessions.close()
    return timings


def pct(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[int(q) - 1]


def table(sqlite: dict[str, list[float]], pg: dict[str, list[float]]) -> str:
    lines = [
        "| operation | SQLite p50 ms | SQLite p99 ms | PostgreSQL p50 ms | PostgreSQL p99 ms "
        "| PG/SQLite (p50) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in sqlite:
        s50, s99 = statistics.median(sqlite[name]), pct(sqlite[name], 99)
        p50, p99 = statistics.median(pg[name]), pct(pg[name], 99)
        lines.append(
            f"| {name} | {s50:.3f} | {s99:.3f} | {p50:.3f} | {p99:.3f} | {p50 / s50:.1f}x |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--url", help="a PostgreSQL database (default: a throwaway cluster)")
    args = parser.parse_args()
    server = None
    url = args.url
    if url is None:
        from tests.postgres import PostgresServer, find_bindir

        bindir = find_bindir()
        if bindir is None:
            print("no PostgreSQL here (initdb/pg_ctl); give --url", file=sys.stderr)
            return 1
        server = PostgresServer.start(bindir)
        url = server.create_database()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            sqlite_store = open_store(str(Path(tmp) / "gw.sqlite3"), readers=2)
            sqlite_sessions = open_session_store(Path(tmp) / "agentao.sqlite3")
            sqlite = asyncio.run(measure(sqlite_store, sqlite_sessions, args.runs))
        from agentao.store.postgres_sessions import open_postgres_session_store

        pg_sessions = open_postgres_session_store(url)
        pg = asyncio.run(measure(open_store(url), pg_sessions, args.runs))
    finally:
        if server is not None:
            server.stop()
    print(f"{args.runs} runs each; PostgreSQL at {shown(url)}, Python {sys.version.split()[0]}\n")
    print(table(sqlite, pg))
    return 0


if __name__ == "__main__":
    sys.exit(main())
