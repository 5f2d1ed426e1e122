"""uvicorn's HTTP/1.1 protocol, refusing what h11 cannot parse in our error shape.

h11 refuses a request whose request line or headers are not HTTP/1.1 (a header value
with CR, LF or NUL in it among them: `X-Session-Id: a<CR>b`) before any ASGI app
runs, so no route and no turn ever sees it; uvicorn then answers a text/plain 400.
`GatewayH11Protocol` answers that same 400 as every other gateway error is shaped,
`{"error": {"message", "type", "param", "code"}}`, and closes the connection as
uvicorn does. `serve()` runs uvicorn with it (never `auto`: httptools, where
installed, parses differently), and so do the tests.
"""

from __future__ import annotations

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from agentao.gateway.errors import BadRequest
from agentao.store.gateway_records import encode_json

MALFORMED = BadRequest(
    "malformed HTTP request: the request line or a header is not valid HTTP/1.1 (a header "
    "value may not hold CR, LF or NUL); nothing was run",
    code="invalid_http_request",
)


class GatewayH11Protocol(H11Protocol):
    def send_400_response(self, msg: str) -> None:
        body = encode_json(MALFORMED.body())
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=body),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event))
        self.transport.close()


__all__ = ["GatewayH11Protocol"]
