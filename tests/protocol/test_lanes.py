"""Per-session lanes: a synchronous job runs as it is submitted, an async one holds the
lane and what comes after it waits, in order."""

from __future__ import annotations

import asyncio
import logging

from agentao.protocol.lanes import Lanes


async def test_a_synchronous_job_on_an_idle_lane_runs_as_it_is_submitted() -> None:
    # No task per job: the client's update handler is one of these, once per update.
    lanes, ran = Lanes(), []
    lanes.submit("s", lambda: ran.append(1))
    assert ran == [1]
    assert not lanes.busy("s")
    await lanes.join()


async def test_jobs_behind_an_async_one_wait_for_it_in_order() -> None:
    lanes, ran, go = Lanes(), [], asyncio.Event()

    async def slow() -> None:
        await go.wait()
        ran.append("slow")

    lanes.submit("s", slow)
    lanes.submit("s", lambda: ran.append("after"))
    lanes.submit("other", lambda: ran.append("other lane"))  # not held by another lane
    assert lanes.busy("s") and ran == ["other lane"]
    go.set()
    await lanes.join()
    assert ran == ["other lane", "slow", "after"]
    assert not lanes.busy("s")


async def test_a_job_that_raises_is_logged_and_the_lane_serves_the_next(caplog) -> None:
    lanes, ran = Lanes(), []

    def boom() -> None:
        raise ValueError("boom")

    with caplog.at_level(logging.ERROR, logger="agentao.protocol"):
        lanes.submit("s", boom)
        lanes.submit("s", lambda: ran.append("next"))
    await lanes.join()
    assert ran == ["next"]
    assert "notification handler failed" in caplog.text
