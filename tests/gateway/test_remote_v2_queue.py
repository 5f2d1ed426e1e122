"""A v2 remote client's prompt sent while its session's turn runs is held by the gateway's
v2 bridge (on our agent, driven over v1), as a v2 agent holds it (codex-acp 2.6.0, and
`agentao --acp` over v2: tests/e2e/test_agent_v2_queue.py): answered `{messageId}` at its
insertion, after the turn before it ended, each its own turn; `session/cancel` answers the
held ones -32800; beyond `[limits] remote_prompt_queue_depth` one is refused as a v1
client's prompt on a busy session is (-32600).

The first turn waits on a permission question (the scripted agent asks before writing), so
the later prompts arrive while it runs; the test answers it only after the gateway has
read them (a `session/list` sent after them, answered after).
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import pytest

from agentao.gateway.config import ApiKey, Limits
from tests.gateway.conftest import LiveGateway
from tests.gateway.test_remote_v2 import HttpV2, Message, is_update, states, update_of, updates

pytestmark = pytest.mark.timeout(90)


def text(words: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": words}]


async def held_behind_a_question(
    gw: LiveGateway, later: tuple[str, ...], headers: dict[str, str] | None = None
) -> tuple[HttpV2, str]:
    """A v2 peer whose first turn waits on its permission question, and `later` prompts
    sent meanwhile (their replies not awaited), read by the gateway."""
    peer = HttpV2(f"http://127.0.0.1:{gw.port}/acp", headers=headers)
    await peer.open()
    sid = (await peer.call("session/new", {"cwd": gw.config.agents[0].cwd}))["result"]["sessionId"]
    await peer.watch(sid)
    await peer.call("session/prompt", {"sessionId": sid, "prompt": text("please write")}, sid)
    await peer.wait_for(lambda m: m.get("method") == "session/request_permission")
    for words in later:
        prompt = {"sessionId": sid, "prompt": text(words)}
        await peer.send({"jsonrpc": "2.0", "id": words, "method": "session/prompt", "params": prompt}, sid)  # fmt: skip
    await peer.call("session/list", {})
    return peer, sid


def request_task(service: Any, request_id: str) -> asyncio.Task[Any] | None:
    """The gateway's task serving the remote request `request_id`, while it runs."""
    return next((t for (_, i), t in service._serving.items() if i == request_id), None)


def reply_to(peer: HttpV2, request_id: str) -> Message | None:
    return next((m for m in peer.received if m.get("id") == request_id and "method" not in m), None)


async def allow(peer: HttpV2, sid: str) -> None:
    asked = await peer.wait_for(lambda m: m.get("method") == "session/request_permission")
    option = asked["params"]["options"][0]["optionId"]
    answer = {"outcome": {"outcome": "selected", "optionId": option}}
    await peer.send({"jsonrpc": "2.0", "id": asked["id"], "result": answer}, sid)


async def idles(peer: HttpV2, count: int) -> None:
    seen = 0
    while len([s for s in states(peer.received) if s == "idle"]) < count:
        await peer.wait_for(is_update("state_update", state="idle"), seen)
        seen = len(peer.received)


async def test_prompts_sent_during_a_turn_run_after_it_in_order(gateway_factory: Any) -> None:
    gw = gateway_factory()
    peer, sid = await held_behind_a_question(gw, ("second", "third"))
    try:
        assert reply_to(peer, "second") is None and reply_to(peer, "third") is None  # held
        await allow(peer, sid)
        await idles(peer, 3)
        replies = [reply_to(peer, i) for i in ("second", "third")]
        assert all(r is not None and "result" in r for r in replies), replies
        echoed = [u for u in updates(peer.received) if u["sessionUpdate"] == "user_message_chunk"]
        assert [u["content"]["text"] for u in echoed] == ["please write", "second", "third"]
        assert [u["messageId"] for u in echoed[1:]] == [r["result"]["messageId"] for r in replies]  # type: ignore[index]
        said = "".join(
            u["content"]["text"]
            for u in updates(peer.received)
            if u["sessionUpdate"] == "agent_message_chunk"
        )
        assert said.endswith("Answer one.Answer two.")
        assert states(peer.received)[-4:] == ["running", "idle", "running", "idle"]
        # the held reply comes after the idle of the turn before it
        first_idle = next(n for n, m in enumerate(peer.received) if _idle(m))
        assert peer.received.index(replies[0]) > first_idle
        assert peer.errors() == []
    finally:
        await peer.close()


async def test_held_prompts_keep_their_arrival_order_when_a_lookup_before_the_line_is_slow(
    gateway_factory: Any,
) -> None:
    """The gateway looks at the store (is the session held elsewhere?) between reading a
    prompt and putting it in line; on PostgreSQL the second prompt's look could end after
    the third's, and the third ran first. Here the second's look waits until the third
    prompt has arrived: the third must still wait behind it."""
    gw = gateway_factory()
    service = gw.gateway.remote
    looked, arrived = service._held_elsewhere, service._on_request
    third: dict[str, asyncio.Event] = {}

    def on_request(connection: Any, request: Any) -> None:
        if request.id == "third":
            third.setdefault("arrived", asyncio.Event()).set()
        arrived(connection, request)

    async def held_elsewhere(conv: Any) -> bool:
        if asyncio.current_task() is request_task(service, "second"):
            # Until the third has run as far as it can: in line (as before the fix), or
            # waiting for the second to take its place (service.held.arrive).
            await third.setdefault("arrived", asyncio.Event()).wait()
            # No event marks where the third stops (in line, or at `arrive`): a look each turn.
            while not settled(request_task(service, "third"), conv):  # noqa: ASYNC110
                await asyncio.sleep(0)
        return await looked(conv)

    def settled(task: asyncio.Task[Any] | None, conv: Any) -> bool:
        return task is not None and (
            task in service.held._held.get(conv.id, ()) or service.held.arriving(task)
        )

    service._on_request, service._held_elsewhere = on_request, held_elsewhere
    peer, sid = await held_behind_a_question(gw, ("second", "third"))
    try:
        await allow(peer, sid)
        await idles(peer, 3)
        echoed = [u for u in updates(peer.received) if u["sessionUpdate"] == "user_message_chunk"]
        assert [u["content"]["text"] for u in echoed] == ["please write", "second", "third"]
        assert peer.errors() == []
    finally:
        await peer.close()


async def test_cancel_answers_the_held_prompts(gateway_factory: Any) -> None:
    gw = gateway_factory()
    peer, sid = await held_behind_a_question(gw, ("second", "third"))
    try:
        await peer.notify("session/cancel", {"sessionId": sid}, sid)
        await idles(peer, 1)
        for request_id in ("second", "third"):
            await peer.wait_for(lambda m, i=request_id: m.get("id") == i and "method" not in m)
        codes = [reply_to(peer, i)["error"]["code"] for i in ("second", "third")]  # type: ignore[index]
        assert codes == [-32800, -32800]
        idle = [u for u in updates(peer.received) if u["sessionUpdate"] == "state_update"][-1]
        assert idle["stopReason"] == "cancelled"
        echoed = [u for u in updates(peer.received) if u["sessionUpdate"] == "user_message_chunk"]
        assert [u["content"]["text"] for u in echoed] == ["please write"]
        assert peer.errors() == []
    finally:
        await peer.close()


async def test_cancel_answers_a_prompt_still_on_its_way_to_the_line(gateway_factory: Any) -> None:
    """A prompt read before a `session/cancel` but still looking at the store (is the
    session held elsewhere?) when the cancel is read is answered -32800 like a held one:
    it never runs after the cancel."""
    gw = gateway_factory()
    service = gw.gateway.remote
    looked, cancel = service._held_elsewhere, service._cancel
    cancelled: dict[str, asyncio.Event] = {}

    def on_cancel(connection: Any, session_id: str) -> None:
        cancel(connection, session_id)
        cancelled.setdefault("read", asyncio.Event()).set()

    async def held_elsewhere(conv: Any) -> bool:
        if asyncio.current_task() is request_task(service, "second"):
            await cancelled.setdefault("read", asyncio.Event()).wait()
        return await looked(conv)

    service._cancel, service._held_elsewhere = on_cancel, held_elsewhere
    peer = HttpV2(f"http://127.0.0.1:{gw.port}/acp")
    await peer.open()
    sid = (await peer.call("session/new", {"cwd": gw.config.agents[0].cwd}))["result"]["sessionId"]
    await peer.watch(sid)
    try:
        await peer.call("session/prompt", {"sessionId": sid, "prompt": text("please write")}, sid)
        await peer.wait_for(lambda m: m.get("method") == "session/request_permission")
        prompt = {"sessionId": sid, "prompt": text("second")}
        await peer.send({"jsonrpc": "2.0", "id": "second", "method": "session/prompt", "params": prompt}, sid)  # fmt: skip
        await peer.notify("session/cancel", {"sessionId": sid}, sid)
        answer = await peer.wait_for(lambda m: m.get("id") == "second" and "method" not in m)
        assert answer.get("error", {}).get("code") == -32800, answer
        await idles(peer, 1)
        echoed = [u for u in updates(peer.received) if u["sessionUpdate"] == "user_message_chunk"]
        assert [u["content"]["text"] for u in echoed] == ["please write"]
    finally:
        await peer.close()


async def test_a_prompt_beyond_the_held_depth_is_busy(gateway_factory: Any) -> None:
    gw = gateway_factory(limits=Limits(remote_prompt_queue_depth=1))
    peer, sid = await held_behind_a_question(gw, ("second", "third"))
    try:
        refused = await peer.wait_for(lambda m: m.get("id") == "third" and "method" not in m)
        assert refused["error"]["code"] == -32600, refused
        assert reply_to(peer, "second") is None
        await allow(peer, sid)
        await idles(peer, 2)
        assert "result" in (reply_to(peer, "second") or {})
    finally:
        await peer.close()


async def test_a_held_prompt_is_held_to_the_budget_its_key_spent_while_it_waited(
    gateway_factory: Any,
) -> None:
    """The attack: admitted while the day's budget still had room, a key holds prompts
    behind a running turn; when their turn comes the budget is spent. Each is checked
    again then: refused as a new prompt would be, and nothing of it reaches the agent."""
    alice = ApiKey("alice", hashlib.sha256(b"sk-alice").hexdigest(), ceiling="all", policy="ask", tokens_per_day=10)  # fmt: skip
    gw = gateway_factory(keys=(alice,))
    auth = {"Authorization": "Bearer sk-alice"}
    peer, sid = await held_behind_a_question(gw, ("second",), auth)
    try:
        budgets = gw.gateway.budgets
        await asyncio.wrap_future(
            asyncio.run_coroutine_threadsafe(
                gw.gateway.store.spend.charge("alice", budgets.today(), 10, 0.0), gw.gateway.loop
            )
        )
        await allow(peer, sid)
        refused = await peer.wait_for(lambda m: m.get("id") == "second" and "method" not in m)
        assert refused["error"]["code"] == -32600, refused
        assert refused["error"]["data"]["reason"] == "token_budget_exceeded"
        echoed = [u for u in updates(peer.received) if u["sessionUpdate"] == "user_message_chunk"]
        assert [u["content"]["text"] for u in echoed] == ["please write"]
    finally:
        await peer.close()


def _idle(message: Message) -> bool:
    update = update_of(message)
    return update.get("sessionUpdate") == "state_update" and update.get("state") == "idle"
