"""API keys: who may use which agent, permission ceilings, and objects kept per key."""

from __future__ import annotations

import base64
import hashlib
import json

import openai
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Subprotocol

from agentao.gateway.config import ApiKey
from tests.gateway.conftest import LiveGateway, scripted_spec


def key(name: str, secret: str, **kw) -> ApiKey:
    return ApiKey(name, hashlib.sha256(secret.encode()).hexdigest(), **kw)


@pytest.fixture(scope="module")
def keyed(tmp_path_factory: pytest.TempPathFactory):
    from agentao.gateway.config import GatewayConfig

    tmp = tmp_path_factory.mktemp("keyed")
    agents = (scripted_spec(tmp / "a"), scripted_spec(tmp / "b", name="other"))
    keys = (
        key("alice", "sk-alice", agents=frozenset({"agentao"}), ceiling="ask", policy="reads"),
        key("bob", "sk-bob", ceiling="reject"),
        # The config file refuses this name; built here to show that no name is special.
        key("local", "sk-local", ceiling="reject"),
    )
    live = LiveGateway(GatewayConfig(agents=agents, keys=keys), tmp / "gw.sqlite3").start()
    yield live
    live.stop()


def hi(client: openai.OpenAI, model: str = "agentao", **kw) -> str:
    reply = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "hi"}], **kw
    )
    return reply.choices[0].message.content


def test_a_key_is_required_and_checked(keyed: LiveGateway) -> None:
    with keyed.http() as http:  # the SDK will not send a request without a key
        missing = http.get("/v1/models")
    assert missing.status_code == 401
    assert missing.json()["error"]["code"] == "missing_api_key"
    with pytest.raises(openai.AuthenticationError) as wrong:
        keyed.openai(key="sk-mallory").models.list()
    assert wrong.value.body["code"] == "invalid_api_key"
    with keyed.http() as http:
        health = http.get("/healthz").json()  # no key needed to ask if the server is up
    assert health["auth_required"] is True


def test_keys_see_and_use_only_their_agents(keyed: LiveGateway) -> None:
    alice, bob = keyed.openai("sk-alice"), keyed.openai("sk-bob")
    assert [m.id for m in alice.models.list()] == ["agentao"]
    assert {m.id for m in bob.models.list()} >= {"agentao", "other"}
    with pytest.raises(openai.PermissionDeniedError) as denied:
        hi(alice, "other")
    assert denied.value.body["param"] == "model"
    assert hi(alice) == "Answer one."
    assert hi(bob, "other") == "Answer one."


def test_policy_above_the_ceiling_is_refused(keyed: LiveGateway) -> None:
    alice = keyed.openai("sk-alice")
    with pytest.raises(openai.PermissionDeniedError) as info:
        hi(alice, extra_headers={"X-Permission-Policy": "all"})
    assert info.value.body["code"] == "policy_above_ceiling"
    with pytest.raises(openai.PermissionDeniedError) as body:  # the body field: the same ceiling
        hi(alice, extra_body={"x_permission_policy": "all"})
    assert body.value.body["code"] == "policy_above_ceiling"
    with pytest.raises(openai.PermissionDeniedError):  # the body wins over a modest header
        hi(
            alice,
            extra_headers={"X-Permission-Policy": "reads"},
            extra_body={"x_permission_policy": "all"},
        )
    with keyed.http("sk-alice") as http:
        task = {"agent": "agentao", "prompt": "x", "permission_policy": "all"}
        assert http.post("/v1/tasks", json=task).status_code == 403
    assert hi(alice, extra_body={"x_permission_policy": "ask"}) == "Answer one."
    with pytest.raises(openai.BadRequestError):
        hi(alice, extra_body={"x_permission_policy": "sometimes"})


def test_the_key_default_policy_applies(keyed: LiveGateway) -> None:
    with keyed.http("sk-alice") as http:  # alice: reads approved by default
        task = http.post("/v1/tasks", json={"agent": "agentao", "prompt": "read the notes"}).json()
    with connect(
        keyed.ws_url(task["stream_url"]), additional_headers={"Authorization": "Bearer sk-alice"}
    ) as ws:
        frames = [json.loads(m) for m in ws]
    decision = next(f for f in frames if f["type"] == "permission-response")
    assert decision["approved"] is True and decision["by"] == "policy"


@pytest.mark.parametrize("other", ["sk-bob", "sk-local"])
def test_objects_of_one_key_are_invisible_to_another(keyed: LiveGateway, other: str) -> None:
    alice, bob = keyed.openai("sk-alice"), keyed.openai(other)
    response = alice.responses.create(model="agentao", input="secret")
    for attempt in (
        lambda: bob.responses.retrieve(response.id),
        lambda: bob.responses.cancel(response.id),
        lambda: bob.responses.delete(response.id),
        lambda: bob.responses.create(model="agentao", input="x", previous_response_id=response.id),
    ):
        with pytest.raises(openai.NotFoundError):
            attempt()
    assert alice.responses.retrieve(response.id).output_text  # still there, untouched
    conv = response.model_extra["x_conversation_id"]
    with keyed.http("sk-alice") as http:
        task = http.get(f"/v1/conversations/{conv}/tasks").json()["data"][0]["id"]
    with keyed.http(other) as http:
        titles = [c["title"] for c in http.get("/v1/conversations").json()["data"]]
        assert "secret" not in titles
        for path in (f"/v1/conversations/{conv}/tasks", f"/v1/tasks/{task}"):
            assert http.get(path).status_code == 404, path
        assert http.get(f"/v1/tasks/{task}/events").status_code == 404
        go_on = {"agent": "agentao", "prompt": "x", "conversation_id": conv}
        assert http.post("/v1/tasks", json=go_on).status_code == 404


@pytest.mark.parametrize("other", ["sk-bob", "sk-local"])
def test_a_key_cannot_see_or_answer_another_keys_questions(keyed: LiveGateway, other: str) -> None:
    with keyed.http("sk-alice") as http:
        ask = {"agent": "agentao", "prompt": "write the file", "permission_policy": "ask"}
        task = http.post("/v1/tasks", json=ask).json()
    alices = {"additional_headers": {"Authorization": "Bearer sk-alice"}}
    with connect(keyed.ws_url(task["stream_url"]), **alices) as ws, keyed.http(other) as bob:
        question = next(f for f in map(json.loads, ws) if f["type"] == "permission-request")
        assert bob.get("/v1/permissions").json()["data"] == []
        path = f"/v1/permissions/{question['requestId']}"
        allow = next(o for o in question["options"] if o["kind"] == "allow_once")
        refused = bob.post(path, json={"optionId": allow["optionId"]})
        assert refused.status_code == 400 and "no open permission" in refused.text
        ws.send(json.dumps({"type": "cancel"}))
        ended = next(f for f in map(json.loads, ws) if f["type"] == "task-ended")
    assert ended["stopReason"] == "cancelled"


def key_protocols(secret: str) -> list[Subprotocol]:
    """What a browser offers: our protocol, and the key (base64url, no padding) beside it."""
    encoded = base64.urlsafe_b64encode(secret.encode()).decode().rstrip("=")
    return [Subprotocol("agentao.v1"), Subprotocol("agentao.key." + encoded)]


def test_websocket_needs_the_key_too(keyed: LiveGateway) -> None:
    with keyed.http("sk-alice") as http:
        task = http.post("/v1/tasks", json={"agent": "agentao", "prompt": "hello"}).json()
    url = keyed.ws_url(task["stream_url"])
    with pytest.raises(InvalidStatus) as missing, connect(url):
        pass
    assert missing.value.response.status_code == 401
    with pytest.raises(InvalidStatus) as other, connect(url, subprotocols=key_protocols("sk-bob")):
        pass  # bob may not watch alice's task: it does not exist for him
    assert other.value.response.status_code == 404
    with connect(url, subprotocols=key_protocols("sk-alice")) as ws:
        assert ws.subprotocol == "agentao.v1"  # never the key
        assert json.loads(ws.recv())["type"] == "task-started"


def test_no_key_in_a_url(keyed: LiveGateway) -> None:
    with keyed.http() as http:
        for path in ("/v1/models", "/healthz", "/"):
            refused = http.get(path, params={"api_key": "sk-alice"})
            assert refused.status_code == 401, path
            assert "Authorization" in refused.json()["error"]["message"]
    with keyed.http("sk-alice") as http:  # even beside a good header
        task = http.post("/v1/tasks", json={"agent": "agentao", "prompt": "hello"}).json()
        assert http.get("/v1/models?api_key=sk-alice").status_code == 401
    stream = keyed.ws_url(task["stream_url"] + "?api_key=sk-alice")
    with pytest.raises(InvalidStatus) as info, connect(stream):
        pass
    assert info.value.response.status_code == 401
