"""Remote ACP: an http/sse MCP server a remote client names may not point the gateway's
host at its own loopback or private network, and carries only the headers the policy
passes (gateway/remote/mcp_urls.py). Real gateway, our agent behind it, the official
SDK's client, and a loopback HTTP server standing for an admin endpoint."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Iterator
from typing import Any

import pytest
from acp import RequestError
from acp.schema import HttpHeader, HttpMcpServer, SseMcpServer

from agentao.gateway.config import ApiKey, McpUrlPolicy
from agentao.gateway.remote.mcp_urls import header_allowed
from tests.fakes.recording_http import AdminEndpoint
from tests.gateway.acp_peers import SdkPeer
from tests.gateway.conftest import LiveGateway

pytestmark = pytest.mark.timeout(90)
KEY = "sk-mallory"


@pytest.fixture
def admin() -> Iterator[AdminEndpoint]:
    endpoint = AdminEndpoint()
    yield endpoint
    endpoint.close()


ATTACKER_HEADERS = {
    "Authorization": "Bearer admin-token",
    "X-Api-Key": "k1",
    "Api-Version": "7",  # passed only when mcp_allowed_headers names it
    "X-Forwarded-For": "10.0.0.1",
    "X-Real-IP": "10.0.0.1",
    "Forwarded": "for=10.0.0.1",
    "Agentao-Forwarded-By": "replica-1",
    "Proxy-Authorization": "Basic eA==",
    "Cookie": "session=admin",
    "Host": "admin.internal",
    "Other": "x",
}


def http_server(url: str, kind: str = "http") -> HttpMcpServer | SseMcpServer:
    headers = [HttpHeader(name=k, value=v) for k, v in ATTACKER_HEADERS.items()]
    if kind == "sse":
        return SseMcpServer(name="admin", url=url, headers=headers, type="sse")
    return HttpMcpServer(name="admin", url=url, headers=headers, type="http")


def gateway(gateway_factory: Any, mcp: McpUrlPolicy) -> LiveGateway:
    key = ApiKey("mallory", hashlib.sha256(KEY.encode()).hexdigest(), ceiling="ask")
    return gateway_factory(keys=(key,), mcp=mcp)


async def connected(gw: LiveGateway) -> SdkPeer:
    url = f"http://127.0.0.1:{gw.port}/acp"
    peer = await SdkPeer.connect(url, headers={"Authorization": f"Bearer {KEY}"})
    await peer.initialize()
    return peer


def loopback_spellings(port: int) -> list[str]:
    return [
        f"http://127.0.0.1:{port}/mcp",
        f"http://localhost:{port}/mcp",
        f"http://[::1]:{port}/mcp",
        f"http://0x7f000001:{port}/mcp",
        f"http://2130706433:{port}/mcp",
        f"http://127.1:{port}/mcp",
        f"http://[::ffff:127.0.0.1]:{port}/mcp",
        f"http://[::ffff:7f00:1]:{port}/mcp",
        f"http://169.254.169.254:{port}/latest/meta-data",
    ]


async def test_a_private_mcp_url_is_refused_and_never_reached(
    gateway_factory: Any, admin: AdminEndpoint
) -> None:
    gw = gateway(gateway_factory, McpUrlPolicy())
    work = gw.config.agents[0].cwd
    peer = await connected(gw)
    try:
        for url in loopback_spellings(admin.port):
            for kind in ("http", "sse"):
                with pytest.raises(RequestError) as refused:
                    await peer.conn.new_session(cwd=work, mcp_servers=[http_server(url, kind)])
                assert refused.value.code == -32602, url
                assert "MCP server 'admin' refused" in str(refused.value), url
                assert "private or local address" in str(refused.value), url
        # load and resume name servers too
        sid = (await peer.conn.new_session(cwd=work, mcp_servers=[])).session_id
        server = http_server(f"http://localhost:{admin.port}/mcp")
        for reopen in (peer.conn.load_session, peer.conn.resume_session):
            with pytest.raises(RequestError) as refused:
                await reopen(session_id=sid, cwd=work, mcp_servers=[server])
            assert refused.value.code == -32602
    finally:
        await peer.close()
    assert admin.requests == []  # every refusal came before any session held the URL


async def test_allowed_private_mcp_url_is_reached_with_only_the_allowed_headers(
    gateway_factory: Any, admin: AdminEndpoint
) -> None:
    """The control: with `mcp_allow_private`, the same request reaches the endpoint (the
    agent connects), and of the client's headers only the policy's arrive."""
    policy = McpUrlPolicy(allow_private=True, allowed_headers=("api-version",))
    gw = gateway(gateway_factory, policy)
    peer = await connected(gw)
    try:
        url = f"http://127.0.0.1:{admin.port}/mcp"
        await peer.conn.new_session(cwd=gw.config.agents[0].cwd, mcp_servers=[http_server(url)])
        assert await asyncio.to_thread(admin.hit.wait, 30)
    finally:
        await peer.close()
    _, path, headers = admin.requests[0]
    assert path == "/mcp"
    assert headers["authorization"] == "Bearer admin-token"
    assert headers["x-api-key"] == "k1" and headers["api-version"] == "7"
    assert headers["host"] == f"127.0.0.1:{admin.port}"  # httpx's own, not the client's
    dropped = {"x-forwarded-for", "x-real-ip", "forwarded", "agentao-forwarded-by"}
    dropped |= {"proxy-authorization", "cookie", "other"}
    assert not dropped & set(headers)


@pytest.mark.parametrize(
    ("name", "passed"),
    [
        ("Authorization", True),
        ("X-Api-Key", True),
        ("x-tenant", True),
        ("Api-Version", False),  # only when mcp_allowed_headers names it
        ("X-Forwarded-For", False),
        ("x-forwarded-host", False),
        ("X-Real-IP", False),
        ("Forwarded", False),
        ("Agentao-Forwarded-By", False),
        ("Host", False),
        ("Cookie", False),
        ("Connection", False),
        ("Content-Length", False),
        ("Transfer-Encoding", False),
        ("Proxy-Authorization", False),
    ],
)
def test_which_headers_pass(name: str, passed: bool) -> None:
    assert header_allowed(name, McpUrlPolicy()) is passed
    listed = McpUrlPolicy(allowed_headers=(name.lower(),))
    assert header_allowed(name, listed) is (passed or name == "Api-Version")
