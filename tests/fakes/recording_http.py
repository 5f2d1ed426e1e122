"""A loopback HTTP server that records every request it gets and answers 404: it stands
for an admin endpoint only this host can reach, in the MCP URL tests."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class AdminEndpoint:
    """A loopback HTTP server that records every request it gets (and answers 404)."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self.hit = threading.Event()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def _record(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                headers = {k.lower(): v for k, v in self.headers.items()}
                endpoint.requests.append((self.command, self.path, headers))
                endpoint.hit.set()
                self.send_error(404)

            do_GET = do_POST = do_DELETE = _record

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
