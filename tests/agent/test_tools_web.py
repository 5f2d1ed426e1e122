"""web_fetch against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from agentao.addresses import is_public_address
from agentao.agent.settings import WebLimits
from agentao.agent.tools.base import ToolContext, ToolError
from agentao.agent.tools.web import WebFetch, html_to_text

PAGE = b"""<!doctype html><html><head><title>Test  page</title>
<style>body { color: red }</style><script>var secret = "SCRIPT";</script></head>
<body><h1>Hello</h1><p>Some <b>bold</b> text and a <a href="/next">link</a>.</p>
<ul><li>one</li><li>two</li></ul><pre>  keep
   spacing</pre></body></html>"""


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        routes = {
            "/page": (200, "text/html; charset=utf-8", PAGE),
            "/text": (200, "text/plain", b"plain text"),
            "/big": (200, "text/plain", b"x" * 100_000),
            "/binary": (200, "image/png", b"\x89PNG...."),
            "/missing": (404, "text/plain", b"no such page"),
        }
        if self.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", "/page")
            self.end_headers()
            return
        if self.path == "/loop":
            self.send_response(302)
            self.send_header("Location", "/loop")
            self.end_headers()
            return
        if self.path == "/slow":
            time.sleep(2)
        status, ctype, body = routes.get(self.path, (200, "text/plain", b"slow"))
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    httpd.server_close()


LOCAL = WebLimits(allow_private_addresses=True)


async def test_fetches_html_as_readable_text(server: str, ctx: ToolContext) -> None:
    tool = WebFetch(LOCAL)
    assert tool.title({"url": f"{server}/page"}) == f"Fetch {server}/page"
    result = await tool.run({"url": f"{server}/page", "prompt": "the heading"}, ctx)
    text = result.model_text
    assert f"URL: {server}/page" in text and "Status: 200" in text
    assert "Looking for: the heading" in text
    assert "Title: Test page" in text
    assert "# Hello" in text
    assert "Some bold text and a link (" + server + "/next)." in text
    assert "- one\n- two" in text
    assert "  keep\n   spacing" in text
    assert "SCRIPT" not in text and "color: red" not in text
    assert not result.is_error


async def test_refuses_loopback_by_default(server: str, ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="private or local address"):
        await WebFetch().run({"url": f"{server}/page"}, ctx)
    with pytest.raises(ToolError, match="private or local address"):
        await WebFetch().run({"url": f"http://localhost:{server.rsplit(':', 1)[1]}/page"}, ctx)


async def test_follows_redirects_with_a_cap(server: str, ctx: ToolContext) -> None:
    result = await WebFetch(LOCAL).run({"url": f"{server}/redirect"}, ctx)
    assert f"URL: {server}/page" in result.model_text
    with pytest.raises(ToolError, match="max_redirects=5"):
        await WebFetch(LOCAL).run({"url": f"{server}/loop"}, ctx)


async def test_size_cap_and_text_cap(server: str, ctx: ToolContext) -> None:
    tool = WebFetch(WebLimits(allow_private_addresses=True, max_bytes=1000))
    result = await tool.run({"url": f"{server}/big"}, ctx)
    assert "download stopped at max_bytes=1000" in result.model_text
    assert result.raw_output["bytes"] == 1000
    tool = WebFetch(WebLimits(allow_private_addresses=True, max_text_chars=50))
    result = await tool.run({"url": f"{server}/big"}, ctx)
    assert "max_text_chars=50" in result.model_text


async def test_time_cap(server: str, ctx: ToolContext) -> None:
    tool = WebFetch(WebLimits(allow_private_addresses=True, timeout=0.3))
    with pytest.raises(ToolError, match=r"longer than 0\.3 s"):
        await tool.run({"url": f"{server}/slow"}, ctx)


async def test_status_binary_and_scheme(server: str, ctx: ToolContext) -> None:
    result = await WebFetch(LOCAL).run({"url": f"{server}/missing"}, ctx)
    assert result.is_error and "Status: 404" in result.model_text
    result = await WebFetch(LOCAL).run({"url": f"{server}/binary"}, ctx)
    assert "image/png content" in result.model_text and "not shown" in result.model_text
    for url in ("file:///etc/passwd", "ftp://example.com/x", "not a url"):
        with pytest.raises(ToolError, match="http"):
            await WebFetch(LOCAL).run({"url": url}, ctx)


@pytest.mark.parametrize(
    ("address", "public"),
    [
        ("8.8.8.8", True),
        ("2606:4700:4700::1111", True),
        ("127.0.0.1", False),
        ("10.1.2.3", False),
        ("172.16.0.1", False),
        ("192.168.1.1", False),
        ("169.254.169.254", False),
        ("100.64.0.1", False),
        ("0.0.0.0", False),
        ("224.0.0.1", False),
        ("::1", False),
        ("fe80::1", False),
        ("fc00::1", False),
        ("::ffff:127.0.0.1", False),
        ("::ffff:10.0.0.1", False),
    ],
)
def test_is_public_address(address: str, public: bool) -> None:
    assert is_public_address(address) is public


def test_html_to_text_skips_hidden_parts() -> None:
    html = "<p>a<script>x()</script>b</p><template>t</template><a href='#top'>top</a>"
    assert html_to_text(html) == "ab\n\ntop"
