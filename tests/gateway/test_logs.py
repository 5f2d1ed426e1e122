"""No secret in a log line: `agentao serve --log-level debug`, its stderr read back."""

from __future__ import annotations

import base64

import httpx
import pytest
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect
from websockets.typing import Subprotocol

from agentao.gateway.logs import redact
from tests.gateway.conftest import SERVED_KEY, ServedGateway

ENCODED_KEY = base64.urlsafe_b64encode(SERVED_KEY.encode()).decode().rstrip("=")


def test_a_key_in_a_url_is_refused_and_never_logged(served_gateway: ServedGateway) -> None:
    ws_base = served_gateway.url.replace("http", "ws", 1)
    auth = {"Authorization": f"Bearer {SERVED_KEY}"}
    with httpx.Client(base_url=served_gateway.url) as http:
        refused = http.get("/v1/models", params={"api_key": SERVED_KEY})
        assert refused.status_code == 401
        task = http.post("/v1/tasks", json={"agent": "agentao", "prompt": "hi"}, headers=auth)
    stream = f"{ws_base}{task.json()['stream_url']}"
    with pytest.raises(InvalidStatus) as info, connect(f"{stream}?api_key={SERVED_KEY}"):
        pass
    assert info.value.response.status_code == 401
    offered = [Subprotocol("agentao.v1"), Subprotocol(f"agentao.key.{ENCODED_KEY}")]
    with connect(stream, subprotocols=offered) as ws:  # the handshake headers are logged
        assert ws.subprotocol == "agentao.v1"
        assert list(ws)  # the whole task, to its end
    with pytest.raises(InvalidStatus), connect(f"{ws_base}/v1/tasks/last-line/stream"):
        pass  # its log line comes after every line the requests above caused
    served_gateway.wait_for_line("last-line")
    log = "".join(served_gateway.lines)
    assert '"WebSocket /v1/tasks/' in log and "/stream?…" in log  # logged, query cut
    assert SERVED_KEY not in log
    assert ENCODED_KEY not in log


@pytest.mark.parametrize(
    ("line", "clean"),
    [
        ('1.2.3.4 - "WebSocket /v1/x?api_key=k&a=1" 401', '1.2.3.4 - "WebSocket /v1/x?…" 401'),
        ("GET http://h:1/p?token=k HTTP/1.1", "GET http://h:1/p?… HTTP/1.1"),
        ("< Authorization: Bearer sk-1", "< Authorization: [redacted]"),
        ("< Cookie: a=b", "< Cookie: [redacted]"),
        (
            "< Sec-WebSocket-Protocol: agentao.v1, agentao.key.c2s",
            "< Sec-WebSocket-Protocol: agentao.v1, agentao.key.[redacted]",
        ),
        ("is this a question? yes", "is this a question? yes"),
    ],
)
def test_redaction(line: str, clean: str) -> None:
    assert redact(line) == clean
