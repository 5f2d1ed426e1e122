"""The agent's SQLite session store commits a new session and a small turn on the event
loop when the writer is idle (two thread hand-offs cost more than such a commit), and a
big one on the writer's thread. Checked by the thread each statement ran on, never by
time; what is stored is the same either way."""

from __future__ import annotations

import threading
from pathlib import Path

from agentao.store.sessions import SessionRecord, StoreSettings, TurnRecord, open_session_store


def statements_by_thread(store) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    store.db.trace(lambda sql: seen.append((threading.current_thread().name, sql.split()[0])))
    return seen


async def test_a_new_session_its_state_and_its_turn_commit_on_the_event_loop(
    tmp_path: Path,
) -> None:
    store = open_session_store(tmp_path / "s.sqlite3")
    seen = statements_by_thread(store)
    await store.create(SessionRecord("s1", "/w", ["/x"], state={"mode": "a"}))
    await store.save_state("s1", {"mode": "b"})  # the mode a gateway sets as it opens one
    await store.commit_turn("s1", TurnRecord({"text": "hi"}, "end_turn", 5.0), {"mode": "c"}, "hi")
    loop = threading.current_thread().name
    written = [sql for thread, sql in seen if sql in ("INSERT", "UPDATE", "COMMIT")]
    assert written == ["INSERT", "COMMIT", "UPDATE", "COMMIT", "INSERT", "UPDATE", "COMMIT"]
    assert {thread for thread, sql in seen} == {loop}
    record = await store.get("s1")
    assert record.state == {"mode": "c"} and record.turn_count == 1 and record.title == "hi"
    assert [t.data for t in await store.turns("s1")] == [{"text": "hi"}]
    await store.close()


async def test_a_big_turn_or_inline_turned_off_commits_on_the_writers_thread(
    tmp_path: Path,
) -> None:
    store = open_session_store(tmp_path / "s.sqlite3", StoreSettings(inline_commit_bytes=0))
    seen = statements_by_thread(store)
    await store.create(SessionRecord("s1", "/w"))
    big = open_session_store(tmp_path / "b.sqlite3")
    await big.create(SessionRecord("s2", "/w"))
    seen_big = statements_by_thread(big)
    await big.commit_turn("s2", TurnRecord({"text": "x" * 70_000}, "end_turn"), {})
    assert {thread for thread, _ in seen} == {"agentao-store"}
    assert {thread for thread, _ in seen_big} == {"agentao-store"}
    assert len((await big.turns("s2"))[0].data["text"]) == 70_000
    await store.close()
    await big.close()
