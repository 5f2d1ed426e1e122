"""Far sessions keep up with the holder's own clients (issue 25; gateway/remote/far_held.py):
on two replicas sharing one PostgreSQL, a v2 client on B of a session A holds has its
prompt sent while a turn runs held on A, in A's line (answered `{messageId}` once its
turn begins, after the idle of the turn before it), dropped -32800 by a `session/cancel`
from B or from A's own client; and a `session/cancel` on B naming a child of that session
cancels that child alone on A, never a child of another key's session.

A's first turn waits on its permission question (the scripted agent asks before it
writes), so B's prompt arrives while it runs; the test knows B's prompt is held on A when
A's line has taken it (`_held_on`), not after a guessed while.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from pathlib import Path
from typing import Any

import pytest

from agentao.client import (
    AgentUrl,
    Client,
    Handlers,
    PermissionAnswer,
    PermissionRequest,
    TurnEnd,
)
from agentao.client.view import ChildEntry
from agentao.gateway.config import ApiKey, Limits
from agentao.gateway.remote import far, service
from tests.gateway.conftest import LiveGateway, scripted_spec
from tests.gateway.test_remote_children import REJECTED_CHILD, STUCK_AND_QUICK
from tests.gateway.test_remote_v2 import (
    INIT_V1,
    Message,
    V2Peer,
    _request,
    _text,
    is_update,
    peer_for,
    states,
    update_of,
    updates,
)

pytestmark = pytest.mark.timeout(90)


def _held_on(holder: LiveGateway) -> threading.Event:
    """Set once the holder's line has taken a prompt passed on by another replica."""
    held = holder.gateway.remote.held
    taken, wait_far = threading.Event(), held.wait_far

    async def waiting(*args: Any) -> None:
        taken.set()  # the line takes it in the same step (held.py `wait`)
        await wait_far(*args)

    held.wait_far = waiting
    return taken


async def _a_turn_asking(a: LiveGateway, b: LiveGateway) -> tuple[V2Peer, V2Peer, str]:
    """A's peer with a turn waiting on its question, and B's peer resumed on that session
    (a far client of it, mid-turn)."""
    at_a, at_b = peer_for(a, "ws"), peer_for(b, "ws")
    await at_a.open()
    sid = (await at_a.call("session/new", {"cwd": a.config.agents[0].cwd}))["result"]["sessionId"]
    await at_a.send(_request(50, "session/prompt", sid, "please write"))
    await at_a.wait_for(lambda m: m.get("method") == "session/request_permission")
    await at_b.open()
    await at_b.call("session/resume", {"sessionId": sid, "cwd": b.config.agents[0].cwd})
    return at_a, at_b, sid


async def _far_prompt_held(a: LiveGateway, b: LiveGateway) -> tuple[V2Peer, V2Peer, str]:
    """A's peer with a turn waiting on its question, and B's peer (a far client of the
    same session) whose prompt "second" (id 99) is held on A behind it."""
    at_a, at_b, sid = await _a_turn_asking(a, b)
    taken = _held_on(a)
    await at_b.send(_request(99, "session/prompt", sid, "second"))
    assert await asyncio.to_thread(taken.wait, 30), "A's line never took B's prompt"
    return at_a, at_b, sid


def _starts_sent(replica: LiveGateway) -> list[str]:
    """The prompts `replica` sends on as `POST /v1/tasks` from now on, in order."""
    peers, sent = replica.gateway.peers, []
    call = peers.call

    async def calling(url: str, method: str, path: str, *args: Any) -> Any:
        if (method, path) == ("POST", "/v1/tasks"):
            sent.append(args[1]["prompt"][0]["text"])
        return await call(url, method, path, *args)

    peers.call = calling
    return sent


def _reply(peer: V2Peer, request_id: int) -> Message | None:
    return next((m for m in peer.received if m.get("id") == request_id and "method" not in m), None)


async def _allow(peer: V2Peer) -> None:
    asked = await peer.wait_for(lambda m: m.get("method") == "session/request_permission")
    option = asked["params"]["options"][0]["optionId"]
    answer = {"outcome": {"outcome": "selected", "optionId": option}}
    await peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer})


def _echoed(peer: V2Peer) -> list[str]:
    chunks = [u for u in updates(peer.received) if u["sessionUpdate"] == "user_message_chunk"]
    return [u["content"]["text"] for u in chunks]


async def test_a_far_v2_prompt_sent_during_a_turn_is_held_and_runs_after_it(
    gateway_factory: Any, pg_url: str
) -> None:
    a, b = gateway_factory(store=pg_url), gateway_factory(store=pg_url)
    at_a, at_b, _ = await _far_prompt_held(a, b)
    try:
        assert _reply(at_b, 99) is None  # held, not refused busy
        await _allow(at_a)
        reply = await at_b.wait_for(lambda m: m.get("id") == 99 and "method" not in m)
        message_id = reply["result"]["messageId"]
        echo = await at_b.wait_for(is_update("user_message_chunk", messageId=message_id))
        assert update_of(echo)["content"]["text"] == "second"
        first_idle = at_b.received.index(
            await at_b.wait_for(is_update("state_update", state="idle"))
        )
        # after the turn before it ended, before anything of its own turn
        assert first_idle < at_b.received.index(reply) < at_b.received.index(echo)
        await at_b.wait_for(is_update("state_update", state="idle"), at_b.received.index(echo))
        assert states(at_b.received)[-2:] == ["running", "idle"]
        assert _echoed(at_b) == ["second"]  # B resumed mid-turn: no replay
        assert at_b.errors() == [] and at_a.errors() == []
    finally:
        await at_a.close()
        await at_b.close()


async def test_a_far_v2_prompt_is_answered_after_the_turn_before_it_ended_however_late_b_is_woken(
    gateway_factory: Any, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B's watcher of the log is not woken until its client has the answer to "second":
    the end of A's turn, stored before "second"'s turn began there, still reaches B's
    client before that answer (far.py `_catch_up`), as it would on a session held here."""
    a, b = gateway_factory(store=pg_url), gateway_factory(store=pg_url)
    at_a, at_b, _ = await _far_prompt_held(a, b)
    answered, read = threading.Event(), far.FarSession._read

    async def woken_late(session: far.FarSession) -> None:
        if asyncio.current_task() is session._watcher:
            await asyncio.to_thread(answered.wait, 30)
        await read(session)

    monkeypatch.setattr(far.FarSession, "_read", woken_late)
    try:
        await _allow(at_a)
        reply = await at_b.wait_for(lambda m: m.get("id") == 99 and "method" not in m)
        answered.set()
        idle = await at_b.wait_for(is_update("state_update", state="idle"))
        assert update_of(idle)["stopReason"] == "end_turn"
        assert at_b.received.index(idle) < at_b.received.index(reply)
        echo = await at_b.wait_for(is_update("user_message_chunk", content=_text("second")))
        assert at_b.received.index(reply) < at_b.received.index(echo)
        await at_b.wait_for(is_update("state_update", state="idle"), at_b.received.index(echo))
        assert _echoed(at_b) == ["second"] and at_b.errors() == [] and at_a.errors() == []
    finally:
        answered.set()
        await at_a.close()
        await at_b.close()


async def test_a_far_client_s_prompts_run_in_the_order_sent_whichever_request_is_faster(
    gateway_factory: Any, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B's client sends "second", then "third", while A's turn runs. B's two requests to A
    could arrive in either order; B sends "third" once "second" is answered (far.py
    `_in_order`). Here "second"'s request waits until "third" has gone as far as it can:
    into A's line (had B sent it at once), or into B's wait for "second"."""
    a, b = gateway_factory(store=pg_url), gateway_factory(store=pg_url)
    gone = threading.Event()  # "third" is in A's line, or waits on B behind "second"
    held, wait_far = a.gateway.remote.held, a.gateway.remote.held.wait_far

    async def taken_on_a(*args: Any) -> None:
        gone.set()
        await wait_far(*args)

    _waits_behind(monkeypatch, gone)
    call = b.gateway.peers.call

    async def second_late(url: str, method: str, path: str, *args: Any) -> Any:
        if (method, path) == ("POST", "/v1/tasks") and args[1]["prompt"][0]["text"] == "second":
            assert await asyncio.to_thread(gone.wait, 30), "third went nowhere"
        return await call(url, method, path, *args)

    held.wait_far, b.gateway.peers.call = taken_on_a, second_late
    at_a, at_b, sid = await _a_turn_asking(a, b)
    try:
        await at_b.send(_request(99, "session/prompt", sid, "second"))
        await at_b.send(_request(100, "session/prompt", sid, "third"))
        assert await asyncio.to_thread(gone.wait, 30)
        await _allow(at_a)
        third = await at_b.wait_for(lambda m: m.get("id") == 100 and "method" not in m)
        second = await at_b.wait_for(lambda m: m.get("id") == 99 and "method" not in m)
        assert "result" in second and "result" in third, (second, third)
        echo = await at_b.wait_for(is_update("user_message_chunk", content=_text("third")))
        await at_b.wait_for(is_update("state_update", state="idle"), at_b.received.index(echo))
        assert _echoed(at_b) == ["second", "third"] and _echoed(at_a)[1:] == ["second", "third"]
        assert at_b.errors() == [] and at_a.errors() == []
    finally:
        await at_a.close()
        await at_b.close()


async def test_a_far_turn_read_late_is_not_held_for_the_next_prompt_s_answer(
    gateway_factory: Any, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B reads the log late: "second"'s turn only once "third" is on its way to A (the
    read at "second"'s answer, `_catch_up`, found the store away). That turn is of a
    prompt answered already, so B's client gets it at once, not held until "third" is
    answered (which here waits until B has passed "second"'s start on)."""
    a, b = gateway_factory(store=pg_url), gateway_factory(store=pg_url)
    at_a, at_b, sid = await _far_prompt_held(a, b)
    third_sent, started = threading.Event(), threading.Event()
    read_log, read, catch_up = far.FarSession._read, far.FarSession.read, far.FarSession._catch_up

    async def late(session: far.FarSession) -> None:
        if asyncio.current_task() is session._watcher:
            await asyncio.to_thread(third_sent.wait, 30)
        await read_log(session)

    async def store_away_until_third(session: far.FarSession) -> None:
        if third_sent.is_set():
            await catch_up(session)

    def reading(session: far.FarSession, event: Any) -> None:
        if event.type == "task-started" and third_sent.is_set():
            started.set()  # "second"'s: B's reader was held until "third" was sent
        read(session, event)

    call = b.gateway.peers.call

    async def third_waits(url: str, method: str, path: str, *args: Any) -> Any:
        third = (method, path) == ("POST", "/v1/tasks") and args[1]["prompt"][0]["text"] == "third"
        if third:
            third_sent.set()
        reply = await call(url, method, path, *args)
        if third:
            assert await asyncio.to_thread(started.wait, 30), "second's turn waited for third"
        return reply

    monkeypatch.setattr(far.FarSession, "_read", late)
    monkeypatch.setattr(far.FarSession, "_catch_up", store_away_until_third)
    monkeypatch.setattr(far.FarSession, "read", reading)
    b.gateway.peers.call = third_waits
    try:
        await at_b.send(_request(100, "session/prompt", sid, "third"))
        await _allow(at_a)
        third = await at_b.wait_for(lambda m: m.get("id") == 100 and "method" not in m)
        second = at_b.received.index(
            await at_b.wait_for(is_update("user_message_chunk", content=_text("second")))
        )
        assert "result" in third and second < at_b.received.index(third)
        echo = await at_b.wait_for(is_update("user_message_chunk", content=_text("third")))
        await at_b.wait_for(is_update("state_update", state="idle"), at_b.received.index(echo))
        assert _echoed(at_b) == ["second", "third"] and at_b.errors() == []
    finally:
        await at_a.close()
        await at_b.close()


async def test_another_client_s_turn_streams_to_b_while_b_s_prompt_waits_behind_it(
    gateway_factory: Any, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A's client's "mine" and then B's "second" are held on A behind A's turn. "mine"'s
    turn reaches B's client while it runs, not only once "second" is answered after it
    (here that answer waits until B has passed "mine"'s start on); "second"'s own turn
    still comes after its answer."""
    a, b = gateway_factory(store=pg_url), gateway_factory(store=pg_url)
    held, mine_started = a.gateway.remote.held, threading.Event()
    mine_held, wait = threading.Event(), held.wait

    async def waiting(*args: Any) -> None:
        mine_held.set()
        await wait(*args)

    read = far.FarSession.read

    def reading(session: far.FarSession, event: Any) -> None:
        if event.type == "task-started" and event.payload["prompt"] == [_text("mine")]:
            mine_started.set()
        read(session, event)

    call = b.gateway.peers.call

    async def second_waits(url: str, method: str, path: str, *args: Any) -> Any:
        reply = await call(url, method, path, *args)
        if args[1:] and isinstance(args[1], dict) and args[1].get("prompt") == [_text("second")]:
            assert await asyncio.to_thread(mine_started.wait, 30), "mine waited for second"
        return reply

    at_a, at_b, sid = await _a_turn_asking(a, b)
    try:
        held.wait = waiting
        await at_a.send(_request(51, "session/prompt", sid, "mine"))
        assert await asyncio.to_thread(mine_held.wait, 30), "A's line never took mine"
        taken = _held_on(a)
        monkeypatch.setattr(far.FarSession, "read", reading)
        b.gateway.peers.call = second_waits
        await at_b.send(_request(99, "session/prompt", sid, "second"))
        assert await asyncio.to_thread(taken.wait, 30), "A's line never took second"
        await _allow(at_a)
        answer = await at_b.wait_for(lambda m: m.get("id") == 99 and "method" not in m)
        mine = await at_b.wait_for(is_update("user_message_chunk", content=_text("mine")))
        second = await at_b.wait_for(is_update("user_message_chunk", content=_text("second")))
        assert "result" in answer
        index = at_b.received.index
        assert index(mine) < index(answer) < index(second)
        await at_b.wait_for(is_update("state_update", state="idle"), index(second))
        assert _echoed(at_b) == ["mine", "second"] and at_b.errors() == []
    finally:
        await at_a.close()
        await at_b.close()


def _waits_behind(monkeypatch: pytest.MonkeyPatch, behind: threading.Event) -> None:
    """Set `behind` when a far v2 prompt has to wait on this replica for the one sent
    before it (far.py `_in_order`)."""
    in_order = far.FarSession._in_order

    def waiting(session: far.FarSession) -> Any:
        if session._sending.locked():
            behind.set()
        return in_order(session)

    monkeypatch.setattr(far.FarSession, "_in_order", waiting)


@pytest.mark.parametrize("cancelled_on", ["b", "a"])
async def test_session_cancel_drops_a_far_prompt_still_waiting_to_be_sent(
    gateway_factory: Any, pg_url: str, monkeypatch: pytest.MonkeyPatch, cancelled_on: str
) -> None:
    """B's "third" waits on B behind "second", held on A. A `session/cancel` from B, or
    from A's client (which drops "second" on A), answers both -32800; "third" is never
    sent, and nothing of either runs."""
    a, b = gateway_factory(store=pg_url), gateway_factory(store=pg_url)
    at_a, at_b, sid = await _far_prompt_held(a, b)
    behind = threading.Event()
    _waits_behind(monkeypatch, behind)
    starts = _starts_sent(b)
    try:
        await at_b.send(_request(100, "session/prompt", sid, "third"))
        assert await asyncio.to_thread(behind.wait, 30), "third was not held on B"
        canceller = at_b if cancelled_on == "b" else at_a
        await canceller.notify("session/cancel", {"sessionId": sid})
        for request_id in (99, 100):
            reply = await at_b.wait_for(
                lambda m, i=request_id: m.get("id") == i and "method" not in m
            )
            assert reply.get("error", {}).get("code") == -32800, reply
        idle = await at_a.wait_for(is_update("state_update", state="idle"))
        assert update_of(idle)["stopReason"] == "cancelled"
        await at_a.call("session/prompt", {"sessionId": sid, "prompt": [_text("fourth")]})
        await at_a.wait_for(is_update("state_update", state="idle"), at_a.received.index(idle) + 1)
        assert _echoed(at_a) == ["please write", "fourth"] and starts == []
    finally:
        await at_a.close()
        await at_b.close()


def _cancels_done(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set once a far session's cancel (a `session/cancel`, a v1 prompt's request
    cancelled) has done all it does on the holder."""
    done, cancel = threading.Event(), far.FarSession.cancel

    async def cancelling(session: far.FarSession, by: Any = None) -> None:
        await cancel(session, by)
        done.set()

    monkeypatch.setattr(far.FarSession, "cancel", cancelling)
    return done


async def _b_resumed_on_an_idle_session(
    a: LiveGateway, b: LiveGateway, version: int
) -> tuple[V2Peer, V2Peer, str]:
    """A's peer with a session of its own, no turn running, and B's peer (speaking ACP
    `version`) resumed on it: a far client of it."""
    at_a, at_b = peer_for(a, "ws"), peer_for(b, "ws")
    if version == 1:
        at_b.init = INIT_V1
    await at_a.open()
    sid = (await at_a.call("session/new", {"cwd": a.config.agents[0].cwd}))["result"]["sessionId"]
    await at_b.open()
    cwd = b.config.agents[0].cwd
    if version == 1:
        await at_b.call("session/load", {"sessionId": sid, "cwd": cwd, "mcpServers": []})
    else:
        await at_b.call("session/resume", {"sessionId": sid, "cwd": cwd})
    return at_a, at_b, sid


async def _ended_cancelled(at_a: V2Peer) -> None:
    """A's turn ends cancelled: "please write" would otherwise wait on its question."""
    ended = at_a.wait_for(is_update("state_update", state="idle"))
    try:
        idle = await asyncio.wait_for(ended, 30)
    except TimeoutError:
        raise AssertionError("the turn on A was never cancelled") from None
    assert update_of(idle)["stopReason"] == "cancelled", idle


@pytest.mark.parametrize("version", [1, 2])
async def test_a_session_cancel_that_overtakes_a_far_prompt_cancels_the_turn_it_begins(
    gateway_factory: Any, pg_url: str, monkeypatch: pytest.MonkeyPatch, version: int
) -> None:
    """B's client sends a prompt, then `session/cancel` once B is sending the prompt on.
    B passes both on to A as two requests, and here the cancel is done there before the
    prompt's request leaves B: A has nothing to cancel yet. The turn the prompt then begins is cancelled once A's
    answer names it (far.py `_started`), as on a session live on B, where the prompt,
    read first, would have been."""
    a, b = gateway_factory(store=pg_url), gateway_factory(store=pg_url)
    cancelled, on_its_way = _cancels_done(monkeypatch), threading.Event()
    call = b.gateway.peers.call

    async def after_the_cancel(url: str, method: str, path: str, *args: Any) -> Any:
        if (method, path) == ("POST", "/v1/tasks"):
            on_its_way.set()
            assert await asyncio.to_thread(cancelled.wait, 30), "the cancel never went"
        return await call(url, method, path, *args)

    b.gateway.peers.call = after_the_cancel
    at_a, at_b, sid = await _b_resumed_on_an_idle_session(a, b, version)
    try:
        await at_b.send(_request(99, "session/prompt", sid, "please write"))
        assert await asyncio.to_thread(on_its_way.wait, 30), "B never sent the prompt on"
        await at_b.notify("session/cancel", {"sessionId": sid})
        await _ended_cancelled(at_a)
        reply = await at_b.wait_for(lambda m: m.get("id") == 99 and "method" not in m)
        if version == 1:
            assert reply["result"]["stopReason"] == "cancelled", reply
        else:
            assert "messageId" in reply["result"], reply
            idle = await at_b.wait_for(
                is_update("state_update", state="idle"), at_b.received.index(reply)
            )
            assert update_of(idle)["stopReason"] == "cancelled", idle
            assert at_b.errors() == []
        assert _echoed(at_a) == ["please write"] and at_a.errors() == []
    finally:
        await at_a.close()
        await at_b.close()


async def test_a_session_cancel_read_after_a_far_prompt_drops_it_before_it_is_sent(
    gateway_factory: Any, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B's v2 client sends a prompt, then `session/cancel`; here B has done all the cancel
    does before the prompt's task reaches its turn to be sent (`_in_order`, held until
    then). The cancel was read after the prompt: the prompt is dropped, -32800, never
    sent (it is the read order that counts, not which task got there first)."""
    a, b = gateway_factory(store=pg_url), gateway_factory(store=pg_url)
    cancelled, in_order = _cancels_done(monkeypatch), far.FarSession._in_order

    @contextlib.asynccontextmanager
    async def after_the_cancel(session: far.FarSession) -> Any:
        assert await asyncio.to_thread(cancelled.wait, 30), "the cancel never went"
        async with in_order(session):
            yield

    monkeypatch.setattr(far.FarSession, "_in_order", after_the_cancel)
    starts = _starts_sent(b)
    at_a, at_b, sid = await _b_resumed_on_an_idle_session(a, b, 2)
    try:
        await at_b.send(_request(99, "session/prompt", sid, "please write"))
        await at_b.notify("session/cancel", {"sessionId": sid})
        reply = await at_b.wait_for(lambda m: m.get("id") == 99 and "method" not in m)
        assert reply.get("error", {}).get("code") == -32800, reply
        assert starts == [] and _echoed(at_a) == []
        assert at_b.errors() == [] and at_a.errors() == []
    finally:
        await at_a.close()
        await at_b.close()


async def test_a_v1_far_prompt_whose_request_is_cancelled_on_its_way_ends_its_turn_there(
    gateway_factory: Any, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B's v1 client cancels its prompt's request (`$/cancel_request`) while A is still
    beginning the turn B asked for (held here until B has cancelled what it knew to be
    running: nothing yet). The client is answered -32800, and the turn A then begins
    is cancelled once A's answer names it (far.py `_cancel_once_started`)."""
    a, b = gateway_factory(store=pg_url), gateway_factory(store=pg_url)
    cancelled = _cancels_done(monkeypatch)
    entered = threading.Event()
    begin = a.gateway.conversations.begin

    async def begun_after_the_cancel(*args: Any) -> Any:
        entered.set()
        assert await asyncio.to_thread(cancelled.wait, 30), "B never cancelled"
        return await begin(*args)

    a.gateway.conversations.begin = begun_after_the_cancel
    at_a, at_b, sid = await _b_resumed_on_an_idle_session(a, b, 1)
    try:
        await at_b.send(_request(99, "session/prompt", sid, "please write"))
        assert await asyncio.to_thread(entered.wait, 30), "B's prompt never reached A"
        await at_b.notify("$/cancel_request", {"requestId": 99})
        reply = await at_b.wait_for(lambda m: m.get("id") == 99 and "method" not in m)
        assert reply.get("error", {}).get("code") == -32800, reply
        await _ended_cancelled(at_a)
        assert _echoed(at_a) == ["please write"] and at_a.errors() == []
    finally:
        await at_a.close()
        await at_b.close()


@pytest.mark.parametrize("cancelled_on", ["b", "a"])
async def test_session_cancel_answers_a_far_held_prompt_cancelled(
    gateway_factory: Any, pg_url: str, cancelled_on: str
) -> None:
    """From B (passed on to A) or from A's own client: the held prompt is answered
    -32800 and nothing of it is inserted; the running turn ends cancelled."""
    a, b = gateway_factory(store=pg_url), gateway_factory(store=pg_url)
    at_a, at_b, sid = await _far_prompt_held(a, b)
    try:
        canceller = at_b if cancelled_on == "b" else at_a
        await canceller.notify("session/cancel", {"sessionId": sid})
        refused = await at_b.wait_for(lambda m: m.get("id") == 99 and "method" not in m)
        assert refused["error"]["code"] == -32800, refused
        idle = await at_a.wait_for(is_update("state_update", state="idle"))
        assert update_of(idle)["stopReason"] == "cancelled"
        await at_b.wait_for(is_update("state_update", state="idle"))
        assert _echoed(at_a) == ["please write"] and _echoed(at_b) == []  # B resumed mid-turn
        assert at_b.errors() == []
    finally:
        await at_a.close()
        await at_b.close()


async def test_a_far_held_prompt_whose_request_is_cancelled_leaves_the_line_alone(
    gateway_factory: Any, pg_url: str
) -> None:
    """`$/cancel_request` of B's held prompt: answered -32800, it leaves A's line, and the
    turn it waited behind goes on (it is not that prompt's turn to cancel)."""
    a, b = gateway_factory(store=pg_url), gateway_factory(store=pg_url)
    at_a, at_b, sid = await _far_prompt_held(a, b)
    try:
        await at_b.notify("$/cancel_request", {"requestId": 99})
        refused = await at_b.wait_for(lambda m: m.get("id") == 99 and "method" not in m)
        assert refused["error"]["code"] == -32800, refused
        await _allow(at_a)
        idle = await at_a.wait_for(is_update("state_update", state="idle"))
        assert update_of(idle)["stopReason"] == "end_turn"
        await at_a.call("session/prompt", {"sessionId": sid, "prompt": [_text("third")]})
        await at_a.wait_for(is_update("state_update", state="idle"), at_a.received.index(idle) + 1)
        assert _echoed(at_a) == ["please write", "third"]  # nothing of B's prompt ran
    finally:
        await at_a.close()
        await at_b.close()


async def test_a_far_prompt_beyond_the_held_depth_is_busy(
    gateway_factory: Any, pg_url: str
) -> None:
    """`[limits] remote_prompt_queue_depth` bounds B's prompts: its first one is held on
    A, and B sends the next only once that one is answered (far.py `_in_order`), so one
    more than the depth is refused busy on B, never sent."""
    limits = Limits(remote_prompt_queue_depth=1)
    a = gateway_factory(store=pg_url, limits=limits)
    b = gateway_factory(store=pg_url, limits=limits)
    at_a, at_b, sid = await _far_prompt_held(a, b)
    starts = _starts_sent(b)
    try:
        await at_b.send(_request(100, "session/prompt", sid, "third"))
        refused = await at_b.wait_for(lambda m: m.get("id") == 100 and "method" not in m)
        assert refused["error"]["code"] == -32600, refused
        assert starts == []  # refused here: never sent to A, nor later
        assert _reply(at_b, 99) is None
        await _allow(at_a)
        assert "result" in await at_b.wait_for(lambda m: m.get("id") == 99 and "method" not in m)
    finally:
        await at_a.close()
        await at_b.close()


# ---- one child's cancel, from B ---------------------------------------------------------


def _acp(gw: LiveGateway, key: str | None = None) -> AgentUrl:
    return AgentUrl(f"ws://127.0.0.1:{gw.port}/acp", api_key=key)


async def _never_answered(request: PermissionRequest) -> None:
    await asyncio.Event().wait()


@pytest.mark.parametrize("protocol", [1, 2])
async def test_a_far_client_cancels_one_child_alone_on_the_holder(
    gateway_factory: Any, pg_url: str, tmp_path: Path, protocol: int
) -> None:
    spec = scripted_spec(tmp_path, STUCK_AND_QUICK)
    a = gateway_factory(store=pg_url, agents=(spec,))
    b = gateway_factory(store=pg_url, agents=(spec,))
    cwd = spec.cwd

    async def cancelled_from_b(request: PermissionRequest) -> None:
        far = Handlers(permission=_never_answered)
        async with Client(_acp(b), protocol=protocol, subagents=True, handlers=far) as on_b:
            await on_b.resume_session(request.root_session_id or "", cwd)
            cancel = {"sessionId": request.session_id}  # the stuck child's
            assert await on_b.channel.call_raw("session/cancel", cancel, 10) == {}
            await asyncio.Event().wait()  # never answered: the cancel withdraws the question

    handlers = Handlers(permission=cancelled_from_b)
    async with Client(_acp(a), protocol=protocol, subagents=True, handlers=handlers) as on_a:
        session = await on_a.new_session(cwd)
        events = [e async for e in session.prompt("two children")]
    assert [e.stop_reason for e in events if isinstance(e, TurnEnd)] == ["end_turn"]
    kids = {e.title: e for e in session.view.entries if isinstance(e, ChildEntry)}
    assert (kids["stuck"].state, kids["stuck"].stop_reason) == ("idle", "cancelled")
    assert (kids["quick"].state, kids["quick"].stop_reason) == ("idle", "end_turn")
    assert session.view.text.strip() == "parent goes on"


def _child_cancels_done(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set once a replica has handled a `session/cancel` naming no session of its own
    (service.py hands those to `cancel_child_anywhere`)."""
    done, cancel = threading.Event(), service.cancel_child_anywhere

    async def cancelling(*args: Any) -> bool:
        try:
            return await cancel(*args)
        finally:
            done.set()

    monkeypatch.setattr(service, "cancel_child_anywhere", cancelling)
    return done


async def test_another_keys_far_client_cannot_cancel_a_child_it_does_not_watch(
    gateway_factory: Any, pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attack: Bob, on B, watches a session of his own that A holds, and names Alice's
    child there. Nothing is cancelled: Alice's child ends as her answer says."""
    keys = (
        ApiKey("alice", _sha("sk-alice"), ceiling="ask", policy="ask"),
        ApiKey("bob", _sha("sk-bob"), ceiling="ask", policy="ask"),
    )
    spec = scripted_spec(tmp_path, REJECTED_CHILD)
    a = gateway_factory(store=pg_url, agents=(spec,), keys=keys)
    b = gateway_factory(store=pg_url, agents=(spec,), keys=keys)
    handled = _child_cancels_done(monkeypatch)

    async def bob_cancels_then_alice_rejects(request: PermissionRequest) -> PermissionAnswer:
        async with Client(_acp(a, "sk-bob"), subagents=True) as bob_on_a:
            own = await bob_on_a.new_session(spec.cwd)  # held by A
            async with Client(_acp(b, "sk-bob"), subagents=True) as bob_on_b:
                await bob_on_b.resume_session(own.id, spec.cwd)  # far, on B
                cancel = {"sessionId": request.session_id}  # Alice's child
                assert await bob_on_b.channel.call_raw("session/cancel", cancel, 10) == {}
                assert await asyncio.to_thread(handled.wait, 30)  # B has passed it on, or not
        option = next(o for o in request.options if o.kind == "reject_once")
        return PermissionAnswer(option.option_id)

    handlers = Handlers(permission=bob_cancels_then_alice_rejects)
    async with Client(_acp(a, "sk-alice"), subagents=True, handlers=handlers) as alice:
        session = await alice.new_session(spec.cwd)
        events = [e async for e in session.prompt("delegate it")]
    assert [e.stop_reason for e in events if isinstance(e, TurnEnd)] == ["end_turn"]
    [kid] = [e for e in session.view.entries if isinstance(e, ChildEntry)]
    assert (kid.state, kid.stop_reason) == ("idle", "end_turn")  # Bob's cancel reached nothing


def _sha(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def test_a_task_s_busy_must_be_reject_or_queue(gateway_factory: Any) -> None:
    gw = gateway_factory()
    with gw.http() as http:
        bad = http.post("/v1/tasks", json={"agent": "agentao", "prompt": "x", "busy": "later"})
    assert bad.status_code == 400, bad.text
    assert bad.json()["error"]["param"] == "busy"
