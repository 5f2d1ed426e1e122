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


async def test_a_job_takes_its_arguments_on_an_idle_lane_and_behind_a_busy_one() -> None:
    # The endpoint passes a handler and its arguments, not a closure made per update; a
    # handler's stray (not awaitable) result is done, whether run at once or queued.
    lanes, ran, go = Lanes(), [], asyncio.Event()

    def job(*args: object) -> str:
        ran.append(args)
        return "a result, not awaitable"

    lanes.submit("s", job, 1, 2)
    assert ran == [(1, 2)] and not lanes.busy("s")
    lanes.submit("s", go.wait)
    lanes.submit("s", job, 3)
    lanes.submit("s", job)
    assert ran == [(1, 2)] and lanes.busy("s")
    go.set()
    await lanes.join()
    assert ran == [(1, 2), (3,), ()]
    assert not lanes.busy("s")
