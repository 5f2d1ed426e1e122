"""The task stream: frames persisted before they are sent, reconnecting and parallel watchers,
permission requests answered by a human (or by the deadline)."""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

from agentao.gateway.config import Limits
from tests.gateway.conftest import SHARED_ON_EACH_STORE, LiveGateway


def start_task(gw: LiveGateway, prompt: str, **extra: Any) -> dict[str, Any]:
    with gw.http() as http:
        reply = http.post("/v1/tasks", json={"agent": "agentao", "prompt": prompt, **extra})
    assert reply.status_code == 201, reply.text
    return reply.json()


def frames(ws: ClientConnection, *, until_seq: int | None = None) -> list[dict[str, Any]]:
    """Frames (pings skipped) until the server closes, or until `until_seq` was seen."""
    out = []
    for message in ws:
        frame = json.loads(message)
        if frame["type"] == "ping":
            continue
        out.append(frame)
        if until_seq is not None and frame.get("seq", 0) >= until_seq:
            break
    return out


@SHARED_ON_EACH_STORE
def test_a_reconnecting_watcher_misses_nothing(shared_gateway: LiveGateway) -> None:
    task = start_task(shared_gateway, "brief please")
    url = shared_gateway.ws_url(task["stream_url"])
    with connect(url) as ws:
        first = frames(ws, until_seq=6)
    last = first[-1]["seq"]
    with connect(f"{url}?after_seq={last}") as ws:
        rest = frames(ws)
    seen = first + rest
    assert [f["seq"] for f in seen] == list(range(1, len(seen) + 1))
    assert (
        seen[0]["type"] == "task-started" and seen[0]["conversationId"] == task["conversation_id"]
    )
    assert seen[-1]["type"] == "task-ended" and seen[-1]["stopReason"] == "end_turn"
    running = [f for f in seen if f["type"] == "task-running"]
    about_the_session = {"usage_update", "session_info_update"}  # the agent's context meter, title
    kinds = {f["update"]["sessionUpdate"] for f in running} - about_the_session
    assert kinds == {"agent_message_chunk"}
    text = [f["update"]["content"]["text"] for f in running if "content" in f["update"]]
    assert "".join(text) == "tock " * 40
    with connect(url) as ws:  # after the end: the whole stored log, then close
        assert frames(ws) == seen


def test_several_watchers_see_the_same_frames(shared_gateway: LiveGateway) -> None:
    task = start_task(shared_gateway, "brief please")
    url = shared_gateway.ws_url(task["stream_url"])
    results: list[list[dict[str, Any]]] = [[], [], []]

    def watch(i: int) -> None:
        with connect(url) as ws:
            results[i] = frames(ws)

    threads = [threading.Thread(target=watch, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results[0] == results[1] == results[2]
    assert results[0][-1]["type"] == "task-ended"


def test_a_human_approves_through_the_task_stream(shared_gateway: LiveGateway) -> None:
    work = Path(shared_gateway.config.agents[0].cwd)
    (work / "hello.txt").unlink(missing_ok=True)
    task = start_task(shared_gateway, "write the file", permission_policy="ask")
    with connect(shared_gateway.ws_url(task["stream_url"])) as ws:
        seen = []
        for message in ws:
            frame = json.loads(message)
            seen.append(frame)
            if frame["type"] == "permission-request":
                assert frame["title"] == "Write hello.txt" and frame["kind"] == "edit"
                kinds = {o["kind"] for o in frame["options"]}
                # A human gets the *_once choices and "Always allow" (the agent keeps
                # it for this session), never a standing reject.
                assert kinds == {"allow_once", "allow_always", "reject_once"}
                allow = next(o for o in frame["options"] if o["kind"] == "allow_once")
                ws.send(
                    json.dumps(
                        {
                            "type": "permission-response",
                            "requestId": frame["requestId"],
                            "optionId": allow["optionId"],
                        }
                    )
                )
    decision = next(f for f in seen if f["type"] == "permission-response")
    assert decision["by"] == "human" and decision["approved"] is True
    assert seen[-1]["type"] == "task-ended"
    assert (work / "hello.txt").read_text() == "hi\n"


def test_unanswered_ask_is_rejected_at_the_deadline(gateway_factory) -> None:
    gw = gateway_factory(limits=Limits(permission_deadline_seconds=0.3, ping_interval_seconds=0.05))
    task = start_task(gw, "write the file", permission_policy="ask")
    with connect(gw.ws_url(task["stream_url"])) as ws:
        seen = [f for m in ws if (f := json.loads(m))["type"] != "ping"]
    decision = next(f for f in seen if f["type"] == "permission-response")
    assert decision["by"] == "deadline" and decision["approved"] is False
    updates = [f["update"] for f in seen if f["type"] == "task-running"]
    assert any(
        u.get("status") == "failed" for u in updates if u["sessionUpdate"] == "tool_call_update"
    )


def test_a_question_still_open_when_its_turn_ends_is_closed_in_the_log_ahead_of_the_end(
    gateway_factory,
) -> None:
    """Whichever the event loop gets to first, the question's end or the turn's: here the
    desk never hears of the cancel (shielded), as when its cancellation is scheduled after
    the turn ended; the log still records the question `cancelled` before the end frame."""
    gw = gateway_factory(limits=Limits(permission_deadline_seconds=120))
    desk = gw.gateway.desk
    ask = desk._ask

    async def deaf(*args: Any, **kwargs: Any) -> Any:
        return await asyncio.shield(ask(*args, **kwargs))

    desk._ask = deaf
    task = start_task(gw, "write the file", permission_policy="ask")
    with connect(gw.ws_url(task["stream_url"])) as ws:
        for message in ws:
            if json.loads(message)["type"] == "permission-request":
                break
        ws.send(json.dumps({"type": "cancel"}))
        rest = [f for m in ws if (f := json.loads(m))["type"] != "ping"]
    assert rest[-1]["type"] == "task-ended" and rest[-1]["stopReason"] == "cancelled", rest
    [verdict] = [f for f in rest if f["type"] == "permission-response"]
    assert verdict["by"] == "cancelled" and verdict["approved"] is False


def test_a_quiet_stream_is_kept_alive_outside_the_log(gateway_factory) -> None:
    """While the turn waits on a person, the stream sends keep-alives, numbered by no seq.
    The question is read first, so the stream is open through the wait (however late it
    was opened): the next frame is a keep-alive, every time."""
    gw = gateway_factory(limits=Limits(permission_deadline_seconds=60, ping_interval_seconds=0.05))
    task = start_task(gw, "write the file", permission_policy="ask")
    with connect(gw.ws_url(task["stream_url"])) as ws, gw.http() as http:
        for message in ws:
            if json.loads(message)["type"] == "permission-request":
                break
        quiet = json.loads(ws.recv(timeout=30))
        assert quiet["type"] == "ping" and "seq" not in quiet, quiet
        (ask,) = http.get("/v1/permissions").json()["data"]
        chosen = ask["options"][0]["optionId"]
        assert http.post(
            f"/v1/permissions/{ask['requestId']}", json={"optionId": chosen}
        ).is_success
        rest = [json.loads(m) for m in ws]
    assert rest[-1]["type"] in ("task-ended", "task-error") and "seq" in rest[-1]


def test_policies_decide_without_a_human(shared_gateway: LiveGateway) -> None:
    def decision(prompt: str, policy: str | None) -> dict[str, Any]:
        extra = {"permission_policy": policy} if policy else {}
        task = start_task(shared_gateway, prompt, **extra)
        with connect(shared_gateway.ws_url(task["stream_url"])) as ws:
            seen = frames(ws)
        return next(f for f in seen if f["type"] == "permission-response")

    assert decision("write the file", None)["approved"] is False  # the default: reject
    assert decision("read the notes", "reads")["approved"] is True
    assert decision("write the file", "reads")["approved"] is False
    verdict = decision("write the file", "all")
    assert verdict["approved"] is True and verdict["by"] == "policy"


def test_pending_permissions_can_be_answered_over_http(shared_gateway: LiveGateway) -> None:
    task = start_task(shared_gateway, "write the file", permission_policy="ask")
    with connect(shared_gateway.ws_url(task["stream_url"])) as ws, shared_gateway.http() as http:
        for message in ws:
            if json.loads(message)["type"] == "permission-request":
                break
        pending = http.get("/v1/permissions").json()["data"]
        ask = next(p for p in pending if p["taskId"] == task["id"])
        bad = http.post(f"/v1/permissions/{ask['requestId']}", json={"optionId": "nope"})
        assert bad.status_code == 400 and bad.json()["error"]["param"] == "optionId"
        ok = http.post(f"/v1/permissions/{ask['requestId']}", json={"optionId": None})
        assert ok.status_code == 200
        rest = frames(ws)
    decision = next(f for f in rest if f["type"] == "permission-response")
    assert decision["by"] == "human" and decision["approved"] is False


def test_a_watcher_answers_only_its_own_tasks_questions(shared_gateway: LiveGateway) -> None:
    asking = start_task(shared_gateway, "write the file", permission_policy="ask")
    other = start_task(shared_gateway, "slow please")
    with (
        connect(shared_gateway.ws_url(asking["stream_url"])) as ask_ws,
        connect(shared_gateway.ws_url(other["stream_url"])) as other_ws,
    ):
        question = next(f for f in map(json.loads, ask_ws) if f["type"] == "permission-request")
        allow = next(o for o in question["options"] if o["kind"] == "allow_once")
        answer = {"type": "permission-response", "requestId": question["requestId"]}
        other_ws.send(json.dumps({**answer, "optionId": allow["optionId"]}))
        error = next(f for f in map(json.loads, other_ws) if f["type"] == "error")
        assert "no open permission request" in error["message"]
        other_ws.send(json.dumps({"type": "cancel"}))
        ask_ws.send(json.dumps({**answer, "optionId": None}))
        decision = next(f for f in map(json.loads, ask_ws) if f["type"] == "permission-response")
    assert decision["by"] == "human" and decision["approved"] is False


def test_a_watcher_can_cancel_the_task(shared_gateway: LiveGateway) -> None:
    task = start_task(shared_gateway, "slow please")
    with connect(shared_gateway.ws_url(task["stream_url"])) as ws:
        frames(ws, until_seq=3)
        ws.send(json.dumps({"type": "cancel"}))
        rest = frames(ws)
    assert rest[-1]["type"] == "task-ended" and rest[-1]["stopReason"] == "cancelled"


def test_continuing_a_conversation_and_bad_requests(shared_gateway: LiveGateway) -> None:
    first = start_task(shared_gateway, "hello")
    with connect(shared_gateway.ws_url(first["stream_url"])) as ws:
        frames(ws)
    second = start_task(shared_gateway, "again", conversation_id=first["conversation_id"])
    with connect(shared_gateway.ws_url(second["stream_url"])) as ws:
        seen = frames(ws)
    text = "".join(
        f["update"]["content"]["text"]
        for f in seen
        if f["type"] == "task-running" and f["update"]["sessionUpdate"] == "agent_message_chunk"
    )
    assert text == "Answer two."
    with shared_gateway.http() as http:
        missing = http.post(
            "/v1/tasks", json={"agent": "agentao", "prompt": "x", "conversation_id": "nope"}
        )
        assert missing.status_code == 404
        bad = http.post("/v1/tasks", json={"agent": "agentao"})
        assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
        assert http.get("/v1/tasks/task_nope").status_code == 404


def test_tool_calls_arrive_merged_by_id(shared_gateway: LiveGateway) -> None:
    """A `tool_call_update` says only what changed; each frame also carries the call as it
    now stands (`toolCall`, from the client's session model), so no reader folds it again."""
    task = start_task(shared_gateway, "write the file", permission_policy="all")
    with connect(shared_gateway.ws_url(task["stream_url"])) as ws:
        seen = frames(ws)
    tool_frames = [
        f
        for f in seen
        if f["type"] == "task-running"
        and f["update"]["sessionUpdate"] in ("tool_call", "tool_call_update")
    ]
    assert tool_frames and all("toolCall" in f for f in tool_frames)
    last = tool_frames[-1]
    assert "title" not in last["update"]  # the update itself is partial …
    merged = last["toolCall"]
    assert merged["title"] == "Write hello.txt" and merged["kind"] == "edit"  # … the call is not
    assert merged["status"] == "completed"
    assert merged["content"][0]["type"] == "diff"


def test_a_running_task_is_cancelled_over_http(shared_gateway: LiveGateway) -> None:
    task = start_task(shared_gateway, "slow please")
    with shared_gateway.http() as http:
        cancelled = http.post(f"/v1/tasks/{task['id']}/cancel")
        assert cancelled.status_code == 200 and cancelled.json()["status"] == "ended"
        events = http.get(f"/v1/tasks/{task['id']}/events").json()["data"]
        assert events[-1]["type"] == "task-ended" and events[-1]["stopReason"] == "cancelled"
        again = http.post(f"/v1/tasks/{task['id']}/cancel")
        assert again.status_code == 400 and "is ended" in again.json()["error"]["message"]
        assert http.post("/v1/tasks/task_nope/cancel").status_code == 404


def test_a_task_turn_is_not_mapped_for_an_openai_consumer(shared_gateway: LiveGateway) -> None:
    """A task's readers read its log: nothing maps its updates for an OpenAI consumer it
    does not have. A Chat Completions turn, the control, is mapped for its consumer."""
    gw = shared_gateway
    task = start_task(gw, "brief please")
    with connect(gw.ws_url(task["stream_url"])) as ws:
        seen = frames(ws)
    said = [f["update"] for f in seen if f["type"] == "task-running"]
    assert "".join(u["content"]["text"] for u in said if "content" in u) == "tock " * 40
    conv = gw.run(gw.gateway.conversations.get(task["conversation_id"]))
    assert conv.turn.mapper.full_text == ""

    answer = gw.openai().chat.completions.create(
        model="agentao", messages=[{"role": "user", "content": "brief please"}]
    )
    assert answer.choices[0].message.content == "tock " * 40
    with gw.http() as http:
        newest = http.get("/v1/conversations").json()["data"][0]["id"]
    chat = gw.run(gw.gateway.conversations.get(newest))
    assert chat.turn.mapper.full_text == "tock " * 40


@SHARED_ON_EACH_STORE
def test_a_stream_ends_once_the_task_s_row_says_so(shared_gateway: LiveGateway) -> None:
    """`task-ended` is stored before it is sent, and so is the task's row: a watcher that
    asks about the task the moment its stream closes never reads it still running (the
    row's end is written by a later batch than the frame, after the lease is checked)."""
    conversation = None
    seen: list[str] = []
    for n in range(12):
        extra = {"conversation_id": conversation} if conversation else {}
        task = start_task(shared_gateway, f"hello {n}", **extra)
        conversation = task["conversation_id"]
        with connect(shared_gateway.ws_url(task["stream_url"])) as ws:
            assert frames(ws)[-1]["type"] == "task-ended"
        with shared_gateway.http() as http:
            seen.append(http.get(f"/v1/tasks/{task['id']}").json()["status"])
            listed = http.get(f"/v1/conversations/{conversation}/tasks").json()["data"]
        seen += [t["status"] for t in listed[-1:]]
    assert set(seen) == {"ended"}
