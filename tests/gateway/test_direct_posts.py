"""direct_posts.DirectPosts: a turn's POST (a chat completion, a Responses or Messages
request, a remote-ACP message) reaches its handler past FastAPI's routing, with every
middleware outside it (Guard, BodyLimit, HolderRouting) and every refusal as before."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import Response

from agentao.gateway import acp_routes
from agentao.gateway.remote.service import RemoteAcp
from agentao.gateway.service import Gateway
from tests.gateway.conftest import LiveGateway

pytestmark = pytest.mark.timeout(60)

INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
IGNORED = {"jsonrpc": "2.0", "method": "_test/ignored", "params": {}}


@pytest.fixture
def routed(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """For each POST `_post` handles: whether FastAPI's routing ran first (it names the
    route in the scope)."""
    seen: list[bool] = []
    post = acp_routes._post

    async def probe(request: Request, agent: str) -> Response:
        seen.append("route" in request.scope)
        return await post(request, agent)

    monkeypatch.setattr(acp_routes, "_post", probe)
    return seen


@pytest.mark.parametrize("path", ["/acp", "/agents/agentao/acp"])
def test_a_post_skips_the_routing(
    shared_gateway: LiveGateway, routed: list[bool], path: str
) -> None:
    with shared_gateway.http() as http:
        opened = http.post(path, json=INIT)
        assert opened.status_code == 200
        assert opened.headers["set-cookie"].startswith(acp_routes.AFFINITY_COOKIE)
        headers = {"Acp-Connection-Id": opened.headers["acp-connection-id"]}
        accepted = http.post(path, json=IGNORED, headers=headers)
        assert accepted.status_code == 202
        assert accepted.headers["set-cookie"].startswith(acp_routes.AFFINITY_COOKIE)
        http.delete(path, headers=headers)
    assert routed == [False, False]


def test_refusals_keep_their_shape(shared_gateway: LiveGateway, routed: list[bool]) -> None:
    with shared_gateway.http() as http:
        not_json = http.post("/acp", content=b"{}", headers={"Content-Type": "text/plain"})
        unknown = http.post("/acp", json=IGNORED, headers={"Acp-Connection-Id": "acpc_nope"})
        no_agent = http.post("/agents/nobody/acp", json=INIT)
        slash = http.post("/acp/", json=INIT)  # not this path: the routes answer it
    assert not_json.status_code == 415
    assert not_json.json()["error"]["type"] == "invalid_request_error"
    assert unknown.status_code == 404
    assert set(unknown.json()["error"]) == {"message", "type", "param", "code"}
    assert no_agent.status_code == 404
    assert slash.status_code in (307, 404, 405)
    assert routed[:3] == [False, False, False]


def test_guard_still_runs_first(shared_gateway: LiveGateway, routed: list[bool]) -> None:
    """A foreign Origin is refused by Guard before the handler runs."""
    with shared_gateway.http() as http:
        refused = http.post("/acp", json=INIT, headers={"Origin": "https://evil.example"})
    assert refused.status_code == 403
    assert routed == []


def test_a_requests_work_starts_before_its_202(
    shared_gateway: LiveGateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The request's task (for a prompt: its way to the agent) takes its first step
    before the POST's reply is encoded and written, not after."""
    order: list[str] = []
    serve = RemoteAcp._serve
    reply = Response.__call__

    async def serving(self: RemoteAcp, *args: Any) -> None:
        order.append("serve")
        await serve(self, *args)

    async def replying(self: Response, *args: Any) -> None:
        if self.status_code == 202:
            order.append("202")
        await reply(self, *args)

    monkeypatch.setattr(RemoteAcp, "_serve", serving)
    monkeypatch.setattr(Response, "__call__", replying)
    listing = {"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}}
    with shared_gateway.http() as http:
        opened = http.post("/acp", json=INIT)
        headers = {"Acp-Connection-Id": opened.headers["acp-connection-id"]}
        assert http.post("/acp", json=listing, headers=headers).status_code == 202
        seen = list(order)
        http.delete("/acp", headers=headers)
    assert seen == ["serve", "202"]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        (
            "/v1/chat/completions",
            {"model": "nobody", "messages": [{"role": "user", "content": "hi"}]},
        ),
        ("/v1/responses", {"model": "nobody", "input": "hi"}),
        (
            "/v1/messages",
            {"model": "nobody", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
        ),
    ],
)
def test_a_turns_post_skips_the_routing_and_keeps_its_answers(
    shared_gateway: LiveGateway, monkeypatch: pytest.MonkeyPatch, path: str, body: dict
) -> None:
    """Each face reads its body through `Gateway.decode`: whether FastAPI's routing ran
    first (it names the route in the scope) is recorded there. The answer is the face's
    own (here an unknown model's 404, in its shape), and a foreign Origin is still
    refused before the handler."""
    routed: list[bool] = []
    decode = Gateway.decode

    async def probe(self: Gateway, request: Request, *args: Any) -> Any:
        routed.append("route" in request.scope)
        return await decode(self, request, *args)

    monkeypatch.setattr(Gateway, "decode", probe)
    with shared_gateway.http() as http:
        unknown = http.post(path, json=body)
        refused = http.post(path, json=body, headers={"Origin": "https://evil.example"})
        malformed = http.post(path, content=b"{", headers={"Content-Type": "application/json"})
    assert routed == [False, False]
    assert unknown.status_code == 404, unknown.text
    assert "nobody" in unknown.text
    assert refused.status_code == 403
    assert malformed.status_code == 400
