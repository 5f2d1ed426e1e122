"""Request bodies are capped while they stream in: memory stays bounded by the limit."""

from __future__ import annotations

from collections.abc import Iterator

import httpx

from tests.gateway.conftest import SERVED_KEY, LiveGateway, ServedGateway

MiB = 1024 * 1024
AUTH = {"Authorization": f"Bearer {SERVED_KEY}", "Content-Type": "application/json"}


def chunks(total: int, size: int = MiB) -> Iterator[bytes]:
    """`total` bytes of a JSON-looking body, one reused chunk at a time (a chunked upload)."""
    block = b" " * size
    yield b'{"model": "agentao", "messages": "'
    for _ in range(total // size):
        yield block


def test_a_huge_chunked_body_is_refused_without_being_held(served_gateway: ServedGateway) -> None:
    before = served_gateway.peak_rss_kib()
    with httpx.Client(base_url=served_gateway.url, timeout=120) as http:
        reply = http.post("/v1/chat/completions", content=chunks(512 * MiB), headers=AUTH)
    after = served_gateway.peak_rss_kib()
    print(f"gateway peak RSS (VmHWM): {before} KiB before, {after} KiB after a 512 MiB body")
    assert reply.status_code == 413
    assert reply.json()["error"]["code"] == "body_too_large"
    assert after - before < 64 * 1024


def test_a_chunked_body_within_the_limit_is_read(served_gateway: ServedGateway) -> None:
    body = [b'{"optionId": ', b"null}"]  # decoded, then refused for what it says
    with httpx.Client(base_url=served_gateway.url) as http:
        reply = http.post("/v1/permissions/perm_none", content=iter(body), headers=AUTH)
    assert reply.status_code == 400
    assert "no open permission request" in reply.json()["error"]["message"]


def test_a_declared_length_above_the_limit_is_refused_unread(shared_gateway: LiveGateway) -> None:
    limit = shared_gateway.config.limits.max_request_bytes
    with shared_gateway.http() as http:
        reply = http.post(
            "/v1/chat/completions",
            content=b"x" * (limit + 1),
            headers={"Content-Type": "application/json"},
        )
    assert reply.status_code == 413
    assert reply.json()["error"]["type"] == "invalid_request_error"
