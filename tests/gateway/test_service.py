"""Request plumbing every route shares: a JSON body is read only when declared JSON."""

from __future__ import annotations

import json

import pytest

from tests.gateway.conftest import LiveGateway

BODY = json.dumps({"optionId": None})  # a valid answer, to a question that is not open

# (Content-Type sent, status): 400 means the body was read as JSON (and then refused for
# what it says), 415 means it was not read at all. Forms and text/plain are what a page
# can POST to another origin without a CORS preflight.
CONTENT_TYPES = [
    ("application/json", 400),
    ("application/json; charset=utf-8", 400),
    ("Application/JSON", 400),
    ("application/merge-patch+json", 400),
    ("text/plain", 415),
    ("text/plain; charset=utf-8", 415),
    ("application/x-www-form-urlencoded", 415),
    ("multipart/form-data; boundary=x", 415),
    ("application/jsonp", 415),
    ("text/json", 415),
    (None, 415),
]


@pytest.mark.parametrize(("content_type", "status"), CONTENT_TYPES)
def test_json_only_as_json(
    shared_gateway: LiveGateway, content_type: str | None, status: int
) -> None:
    headers = {"Content-Type": content_type} if content_type else {}
    with shared_gateway.http() as http:
        reply = http.post("/v1/permissions/perm_none", content=BODY, headers=headers)
    assert reply.status_code == status
    if status == 415:
        error = reply.json()["error"]
        assert error["code"] == "unsupported_content_type"
        assert "application/json" in error["message"]


def test_every_json_route_checks_the_content_type(shared_gateway: LiveGateway) -> None:
    chat = {"model": "agentao", "messages": [{"role": "user", "content": "hi"}]}
    bodies = {
        "/v1/chat/completions": chat,
        "/v1/responses": {"model": "agentao", "input": "hi"},
        "/v1/tasks": {"agent": "agentao", "prompt": "hi"},
    }
    with shared_gateway.http() as http:
        before = http.get("/v1/conversations").json()["data"]
        for path, body in bodies.items():
            reply = http.post(
                path, content=json.dumps(body), headers={"Content-Type": "text/plain"}
            )
            assert reply.status_code == 415, path
        assert http.get("/v1/conversations").json()["data"] == before  # nothing started
