"""web_fetch: one URL, fetched with caps, turned into readable text.

Private addresses: the host is resolved first and *every* address checked
(`agentao.addresses`, the rule the gateway applies to MCP URLs too); loopback,
private, link-local, multicast, reserved and unspecified ones are refused unless
`WebLimits.allow_private_addresses`. The request then goes to the checked address
itself (Host header and TLS SNI/verification keep the name), so a DNS answer that
changes between check and connect (rebinding) cannot steer us elsewhere. Redirects
are followed by hand, each hop checked the same way. Proxies from the environment
are not used (they would bypass the check).
"""

from __future__ import annotations

import asyncio
import socket
from html.parser import HTMLParser
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from agentao.addresses import is_public_address
from agentao.agent.events import TextOutput
from agentao.agent.settings import WebLimits, cap_text
from agentao.agent.tools.base import Tool, ToolContext, ToolError, ToolResult

if TYPE_CHECKING:
    import httpx  # imported on first fetch: ~0.1 s the agent need not pay at startup

_TEXTUAL = ("text/", "application/json", "application/xml", "application/xhtml", "+json", "+xml")


class WebFetch(Tool):
    name = "web_fetch"
    kind = "fetch"
    cancellable = True  # a read: stopping it closes the connection, nothing half-done
    description = (
        "Fetch an http(s) URL and return its readable text (HTML is converted to text with"
        " links kept). `prompt` says what you are looking for; it is echoed with the text."
    )
    parameters = {
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "An http:// or https:// URL."},
            "prompt": {"type": "string", "description": "What to look for in the page."},
        },
        "required": ["url"],
    }

    def __init__(self, limits: WebLimits | None = None):
        self.limits = limits or WebLimits()

    def title(self, args: dict[str, Any]) -> str:
        return f"Fetch {args.get('url', '')}"

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        import httpx

        url, prompt = args.get("url"), args.get("prompt")
        if not isinstance(url, str) or not url:
            raise ToolError("`url` must be a non-empty string")
        try:
            async with asyncio.timeout(self.limits.timeout):
                final_url, response, body, cut = await self._fetch(url)
        except TimeoutError as e:
            raise ToolError(f"fetching {url} took longer than {self.limits.timeout:g} s") from e
        except httpx.HTTPError as e:
            raise ToolError(f"fetching {url} failed: {e}") from e
        text = _readable(response, body, final_url)
        if cut:
            text += f"\n[... download stopped at max_bytes={self.limits.max_bytes} bytes]"
        text, _ = cap_text(text, self.limits.max_text_chars, "max_text_chars")
        head = f"URL: {final_url}\nStatus: {response.status_code}\n"
        if isinstance(prompt, str) and prompt:
            head += f"Looking for: {prompt}\n"
        model_text = f"{head}\n{text}"
        failed = response.status_code >= 400
        raw = {"url": final_url, "status": response.status_code, "bytes": len(body)}
        return ToolResult(model_text, (TextOutput(model_text),), is_error=failed, raw_output=raw)

    async def _fetch(self, url: str) -> tuple[str, httpx.Response, bytes, bool]:
        import httpx

        headers = {
            "User-Agent": self.limits.user_agent,
            "Accept": "text/html, text/*;q=0.9, */*;q=0.5",
        }
        async with httpx.AsyncClient(trust_env=False, follow_redirects=False) as client:
            for _ in range(self.limits.max_redirects + 1):
                target = httpx.URL(url)
                if target.scheme not in ("http", "https") or not target.host:
                    raise ToolError(f"only http(s) URLs can be fetched, not {url!r}")
                address = await self._checked_address(target.host, target.port)
                request = client.build_request(
                    "GET",
                    target.copy_with(host=address),
                    headers={**headers, "Host": target.netloc.decode("ascii")},
                    extensions={"sni_hostname": target.host},
                )
                response = await client.send(request, stream=True)
                try:
                    location = response.headers.get("location")
                    if response.is_redirect and location:
                        url = urljoin(str(target), location)
                        continue
                    body, cut = await self._read(response)
                finally:
                    await response.aclose()
                return str(target), response, body, cut
        raise ToolError(f"more than max_redirects={self.limits.max_redirects} redirects")

    async def _read(self, response: httpx.Response) -> tuple[bytes, bool]:
        chunks, size = [], 0
        async for chunk in response.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > self.limits.max_bytes:
                return b"".join(chunks)[: self.limits.max_bytes], True
        return b"".join(chunks), False

    async def _checked_address(self, host: str, port: int | None) -> str:
        """One address of `host`, after checking that none of them is private."""
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(
                host, port or 443, type=socket.SOCK_STREAM
            )
        except OSError as e:
            raise ToolError(f"cannot resolve {host}: {e}") from e
        addresses = [str(info[4][0]).split("%")[0] for info in infos]
        if not addresses:
            raise ToolError(f"cannot resolve {host}")
        if not self.limits.allow_private_addresses:
            for addr in addresses:
                if not is_public_address(addr):
                    raise ToolError(
                        f"{host} resolves to {addr}, a private or local address; refused"
                        " (setting allow_private_addresses is off)"
                    )
        return addresses[0]


def _readable(response: httpx.Response, body: bytes, url: str) -> str:
    ctype = response.headers.get("content-type", "").lower()
    if ctype and not any(t in ctype for t in _TEXTUAL):
        return f"[{ctype} content, {len(body)} bytes: not text, not shown]"
    text = body.decode(response.encoding or "utf-8", "replace")
    if "html" in ctype or (
        not ctype and text.lstrip()[:15].lower().startswith(("<!doctype", "<html"))
    ):
        return html_to_text(text, url)
    return text


_SKIP = frozenset({"script", "style", "noscript", "template", "svg", "head", "iframe", "canvas"})
_PARAGRAPH = frozenset(
    {"p", "div", "section", "article", "header", "footer", "main", "nav", "aside", "ul", "ol"}
    | {"table", "form", "blockquote", "figure", "dl", "pre", "hr", "title"}
    | {"h1", "h2", "h3", "h4", "h5", "h6"}
)
_LINE = frozenset({"li", "br", "tr", "dt", "dd", "figcaption"})
_PRE = "\x00"  # marks a line inside <pre>: kept verbatim


class _TextExtractor(HTMLParser):
    """Text and links of an HTML page; scripts, styles and the like are dropped."""

    def __init__(self, base: str):
        super().__init__(convert_charrefs=True)
        self.base = base
        self.out: list[str] = []
        self.skip = 0
        self.pre = 0
        self.href: str | None = None
        self.title = ""
        self.in_title = False

    def _break(self, tag: str) -> None:
        """End the line (or paragraph): breaks do not add up, `</li><li>` is one newline."""
        want = 2 if tag in _PARAGRAPH else 1 if tag in _LINE else 0
        have = 0
        for piece in reversed(self.out):
            stripped = piece.rstrip(" ")
            have += len(stripped) - len(stripped.rstrip("\n"))
            if stripped.strip("\n"):
                break
        self.out.append("\n" * max(want - have, 0))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":
            self.in_title = True
        if tag in _SKIP:
            self.skip += 1
            return
        self._break(tag)
        if tag in ("h1", "h2", "h3", "h4", "h5", "h6"):
            self.out.append("#" * int(tag[1]) + " ")
        elif tag == "li":
            self.out.append("- ")
        elif tag == "pre":
            self.pre += 1
            self.out.append(_PRE)
        elif tag == "a":
            href = dict(attrs).get("href")
            self.href = urljoin(self.base, href) if href and not href.startswith("#") else None

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if tag in _SKIP:
            self.skip = max(self.skip - 1, 0)
            return
        if tag == "a" and self.href:
            self.out.append(f" ({self.href})")
            self.href = None
        elif tag == "pre":
            self.pre = max(self.pre - 1, 0)
        self._break(tag)

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title += data
        if self.skip:
            return
        if self.pre:
            self.out.append(data.replace("\n", "\n" + _PRE))
        elif words := " ".join(data.split()):
            lead = " " if data[0].isspace() else ""
            self.out.append(lead + words + (" " if data[-1].isspace() else ""))
        elif data:
            self.out.append(" ")

    def text(self) -> str:
        body: list[str] = []
        for raw in "".join(self.out).split("\n"):
            line = raw[1:].rstrip() if raw.startswith(_PRE) else " ".join(raw.split())
            if line or (body and body[-1]):
                body.append(line)
        title = " ".join(self.title.split())
        return (f"Title: {title}\n\n" if title else "") + "\n".join(body).strip("\n")


def html_to_text(html: str, base_url: str = "") -> str:
    """Readable text of an HTML page: block structure as lines, links as `text (url)`."""
    parser = _TextExtractor(base_url)
    parser.feed(html)
    parser.close()
    return parser.text()


__all__ = ["WebFetch", "html_to_text"]
