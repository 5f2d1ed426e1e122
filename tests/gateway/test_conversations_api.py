"""Past conversations: titled by the agent (else the prompt's words), renamed, searched and
deleted by their owner; another key sees none of it."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from websockets.sync.client import connect

from agentao.gateway.config import ApiKey
from tests.gateway.conftest import ON_EACH_STORE, SHARED_ON_EACH_STORE, LiveGateway
from tests.gateway.test_tasks import frames, start_task


def finish(gw: LiveGateway, prompt: str, **extra: Any) -> dict[str, Any]:
    """Run a task to its end; the task as started."""
    task = start_task(gw, prompt, **extra)
    with connect(gw.ws_url(task["stream_url"])) as ws:
        frames(ws)
    return task


def conversation(gw: LiveGateway, conversation_id: str) -> dict[str, Any]:
    with gw.http() as http:
        reply = http.get(f"/v1/conversations/{conversation_id}")
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_the_agents_title_and_never_raw_json(shared_gateway: LiveGateway) -> None:
    prompt = json.dumps({"task": "summarize the quarterly report", "format": "markdown"})
    task = finish(shared_gateway, prompt)
    conv = conversation(shared_gateway, task["conversation_id"])
    # Our agent titles a session with its first prompt's first line; JSON gives its words.
    assert (conv["title"], conv["title_by"]) == ("summarize the quarterly report", "agent")
    assert conv["turn_count"] == 1 and conv["created_at"] <= conv["updated_at"]


def test_a_chat_transcript_is_titled_by_its_user_words(shared_gateway: LiveGateway) -> None:
    reply = shared_gateway.openai().chat.completions.with_raw_response.create(
        model="agentao",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "tell me about\nthe weather"},
        ],
    )
    conv = conversation(shared_gateway, reply.headers["x-session-id"])
    # The system message reaches our agent as its systemPrompt, never as prompt text, so
    # the agent's own title (its first prompt's first line) holds the user's words only.
    assert (conv["title"], conv["title_by"]) == ("tell me about", "agent")


@SHARED_ON_EACH_STORE
def test_rename_sticks_through_later_turns(shared_gateway: LiveGateway) -> None:
    task = finish(shared_gateway, "hello there")
    conv_id = task["conversation_id"]
    with shared_gateway.http() as http:
        renamed = http.post(f"/v1/conversations/{conv_id}", json={"title": " My\nproject "})
        assert renamed.status_code == 200, renamed.text
        assert (renamed.json()["title"], renamed.json()["title_by"]) == ("My project", "person")
        empty = http.post(f"/v1/conversations/{conv_id}", json={"title": "  "})
        assert empty.status_code == 400 and empty.json()["error"]["param"] == "title"
        long = http.post(f"/v1/conversations/{conv_id}", json={"title": "x" * 201})
        assert long.status_code == 400
    finish(shared_gateway, "and again", conversation_id=conv_id)
    conv = conversation(shared_gateway, conv_id)
    assert (conv["title"], conv["turn_count"]) == ("My project", 2)


@SHARED_ON_EACH_STORE
def test_search_finds_titles_and_prompts(shared_gateway: LiveGateway) -> None:
    first = finish(shared_gateway, "plan the zebra migration")
    second = finish(shared_gateway, "hello")
    finish(shared_gateway, "more about okapis", conversation_id=second["conversation_id"])
    with shared_gateway.http() as http:

        def found(q: str) -> set[str]:
            reply = http.get("/v1/conversations", params={"q": q})
            assert reply.status_code == 200, reply.text
            return {c["id"] for c in reply.json()["data"]}

        assert found("ZEBRA") == {first["conversation_id"]}
        assert found("okapi") == {second["conversation_id"]}  # a later prompt's words
        assert found("zebra_") == set() and found("%") == set()  # literal, not wildcards
        too_long = http.get("/v1/conversations", params={"q": "x" * 201})
        assert too_long.status_code == 400 and too_long.json()["error"]["param"] == "q"


@SHARED_ON_EACH_STORE
def test_delete_removes_it_with_its_tasks(shared_gateway: LiveGateway) -> None:
    task = finish(shared_gateway, "something to forget")
    conv_id = task["conversation_id"]
    with shared_gateway.http() as http:
        deleted = http.delete(f"/v1/conversations/{conv_id}")
        assert deleted.status_code == 200
        assert deleted.json() == {"id": conv_id, "object": "conversation.deleted", "deleted": True}
        assert http.get(f"/v1/conversations/{conv_id}").status_code == 404
        assert http.get(f"/v1/conversations/{conv_id}/tasks").status_code == 404
        assert http.get(f"/v1/tasks/{task['id']}").status_code == 404
        assert conv_id not in {c["id"] for c in http.get("/v1/conversations").json()["data"]}
        assert http.delete(f"/v1/conversations/{conv_id}").status_code == 404
        again = http.post(
            "/v1/tasks", json={"agent": "agentao", "prompt": "x", "conversation_id": conv_id}
        )
        assert again.status_code == 404


def test_a_conversation_mid_turn_is_not_deleted(shared_gateway: LiveGateway) -> None:
    task = start_task(shared_gateway, "slow please")
    with connect(shared_gateway.ws_url(task["stream_url"])) as ws:
        frames(ws, until_seq=3)
        with shared_gateway.http() as http:
            busy = http.delete(f"/v1/conversations/{task['conversation_id']}")
        assert busy.status_code == 409 and "retry-after" in busy.headers
        ws.send(json.dumps({"type": "cancel"}))
        frames(ws)


@ON_EACH_STORE
def test_another_key_sees_none_of_it(gateway_factory) -> None:
    keys = tuple(
        ApiKey(name, hashlib.sha256(name.encode()).hexdigest(), ceiling="all")
        for name in ("alice", "bob")
    )
    gw = gateway_factory(keys=keys)
    with gw.http("alice") as alice, gw.http("bob") as bob:
        task = alice.post("/v1/tasks", json={"agent": "agentao", "prompt": "secret plans"})
        conv_id = task.json()["conversation_id"]
        path = f"/v1/conversations/{conv_id}"
        assert bob.get(path).status_code == 404
        assert bob.post(path, json={"title": "mine now"}).status_code == 404
        assert bob.delete(path).status_code == 404
        assert bob.get("/v1/conversations", params={"q": "secret"}).json()["data"] == []
        assert alice.get(path).status_code == 200
