"""Host and Origin checks before any route, for HTTP and the task-stream WebSocket.

Forged `Host`, `Origin` and `Sec-Fetch-Site` headers from real clients against a
real gateway: what a page on another site (or a DNS-rebound name) would send.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from agentao.gateway.config import GatewayConfig, WebPolicy
from agentao.gateway.guard import Guard
from tests.gateway.conftest import LiveGateway
from tests.gateway.test_tasks import start_task

EVIL = "http://evil.example"
CHAT = {
    "model": "agentao",
    "messages": [{"role": "user", "content": "write the file"}],
    "x_permission_policy": "all",
}


def error_code(reply: Any) -> str:
    return reply.json()["error"]["code"]


def conversations(gw: LiveGateway) -> int:
    with gw.http() as http:
        return len(http.get("/v1/conversations").json()["data"])


def ws_refusal(gw: LiveGateway, path: str, *, host: str | None = None, **kw: Any) -> int:
    """The HTTP status a WebSocket handshake is refused with (`host`: the Host it names)."""
    url = f"ws://{host or f'127.0.0.1:{gw.port}'}{path}"
    sock = socket.create_connection(("127.0.0.1", gw.port))
    with pytest.raises(InvalidStatus) as info, connect(url, sock=sock, **kw):
        pass
    return info.value.response.status_code


@pytest.mark.parametrize(
    "host",
    ["evil.example", "evil.example:{port}", "127.0.0.1:1", "localhost.evil.example:{port}", ""],
)
def test_a_host_we_do_not_serve_is_refused_before_any_route(
    shared_gateway: LiveGateway, host: str
) -> None:
    forged = {"Host": host.format(port=shared_gateway.port)}
    with shared_gateway.http() as http:
        for method, path in (("GET", "/"), ("GET", "/healthz"), ("GET", "/v1/conversations")):
            reply = http.request(method, path, headers=forged)
            assert reply.status_code == 421, (host, path)
            assert reply.json()["error"]["type"] == "invalid_request_error"
            assert error_code(reply) == "host_not_allowed"


def test_the_loopback_names_on_our_port_are_served(shared_gateway: LiveGateway) -> None:
    port = shared_gateway.port
    with shared_gateway.http() as http:
        for host in (
            f"127.0.0.1:{port}",
            f"localhost:{port}",
            f"[::1]:{port}",
            f"LOCALHOST:{port}",
        ):
            assert http.get("/healthz", headers={"Host": host}).status_code == 200, host


def test_a_rebound_host_cannot_open_the_task_stream(shared_gateway: LiveGateway) -> None:
    task = start_task(shared_gateway, "hello")
    host = f"evil.example:{shared_gateway.port}"
    assert ws_refusal(shared_gateway, task["stream_url"], host=host) == 421


def test_a_cross_origin_post_runs_nothing(shared_gateway: LiveGateway) -> None:
    before = conversations(shared_gateway)
    body = json.dumps(CHAT)
    with shared_gateway.http() as http:
        for content_type in ("text/plain", "application/json"):
            for origin in (EVIL, "null", f"http://127.0.0.1:{shared_gateway.port + 1}"):
                headers = {"Origin": origin, "Content-Type": content_type}
                reply = http.post("/v1/chat/completions", content=body, headers=headers)
                assert reply.status_code == 403, (origin, content_type)
                assert error_code(reply) == "origin_not_allowed"
        assert http.delete("/v1/responses/resp_x", headers={"Origin": EVIL}).status_code == 403
        task = {"agent": "agentao", "prompt": "write", "permission_policy": "all"}
        assert http.post("/v1/tasks", json=task, headers={"Origin": EVIL}).status_code == 403
    assert conversations(shared_gateway) == before


def test_a_browser_request_from_another_site_without_origin_is_refused(
    shared_gateway: LiveGateway,
) -> None:
    with shared_gateway.http() as http:
        for site in ("cross-site", "same-site"):
            reply = http.post("/v1/chat/completions", json=CHAT, headers={"Sec-Fetch-Site": site})
            assert reply.status_code == 403, site
        ours = {"Sec-Fetch-Site": "same-origin", "Origin": shared_gateway.url}
        reply = http.post("/v1/permissions/perm_none", json={"optionId": None}, headers=ours)
    assert reply.status_code == 400  # through the guard, to the route


def test_a_cross_origin_websocket_is_refused(shared_gateway: LiveGateway) -> None:
    task = start_task(shared_gateway, "hello")
    path = task["stream_url"]
    assert ws_refusal(shared_gateway, path, origin=EVIL) == 403
    with connect(shared_gateway.ws_url(path), origin=shared_gateway.url) as ws:
        assert json.loads(ws.recv())["type"] == "task-started"


def test_permission_answers_come_only_from_our_origin(shared_gateway: LiveGateway) -> None:
    task = start_task(shared_gateway, "write the file", permission_policy="ask")
    with connect(shared_gateway.ws_url(task["stream_url"])) as ws, shared_gateway.http() as http:
        ask = next(f for f in map(json.loads, ws) if f["type"] == "permission-request")
        allow = next(o for o in ask["options"] if o["kind"] == "allow_once")
        answer = {"optionId": allow["optionId"]}
        path = f"/v1/permissions/{ask['requestId']}"
        refused = http.post(path, json=answer, headers={"Origin": EVIL})
        assert refused.status_code == 403
        pending = [p["requestId"] for p in http.get("/v1/permissions").json()["data"]]
        assert ask["requestId"] in pending  # still open: the page decided nothing
        assert http.post(path, json={"optionId": None}).status_code == 200
        decision = next(f for f in map(json.loads, ws) if f["type"] == "permission-response")
    assert decision["by"] == "human" and decision["approved"] is False


def test_a_preflight_from_another_origin_gets_no_cors(shared_gateway: LiveGateway) -> None:
    preflight = {
        "Origin": EVIL,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, x-agentao-client",
    }
    with shared_gateway.http() as http:
        reply = http.options("/v1/chat/completions", headers=preflight)
    assert reply.status_code == 403
    assert "access-control-allow-origin" not in reply.headers


def test_configured_hosts_and_origins(gateway_factory) -> None:
    ui = "http://ui.example:3000"
    gw = gateway_factory(web=WebPolicy(("gw.example",), (ui,)))
    preflight = {
        "Origin": ui,
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, x-agentao-client, authorization",
    }
    with gw.http() as http:
        assert http.get("/healthz", headers={"Host": "gw.example:8443"}).status_code == 200
        allowed = http.options("/v1/chat/completions", headers=preflight)
        assert allowed.status_code == 200
        assert allowed.headers["access-control-allow-origin"] == ui
        assert "x-agentao-client" in allowed.headers["access-control-allow-headers"]
        reply = http.post("/v1/permissions/perm_none", json={}, headers={"Origin": ui})
        assert reply.status_code == 400 and reply.headers["access-control-allow-origin"] == ui
        other = {**preflight, "Origin": "http://ui.example:3001"}
        assert http.options("/v1/chat/completions", headers=other).status_code == 403
    task = start_task(gw, "hello")
    with connect(gw.ws_url(task["stream_url"]), origin=ui) as ws:
        assert json.loads(ws.recv())["type"] == "task-started"


def test_the_name_other_replicas_call_us_by_is_served_on_its_port_only() -> None:
    guard = Guard(None, GatewayConfig(advertise_url="http://gw-a.internal:9000"))  # type: ignore[arg-type]

    def status(host: str) -> int | None:
        scope = {"type": "http", "method": "GET", "headers": [(b"host", host.encode())]}
        refusal = guard.check({**scope, "server": ("10.0.0.5", 8765), "query_string": b""})
        return refusal.status if refusal is not None else None

    assert status("gw-a.internal:9000") is None  # a replica passing a request on
    assert status("gw-a.internal:9001") == 421
    assert status("gw-b.internal:9000") == 421
