"""The web UI in a real browser: Debian's chromium, headless, driven by Playwright.

Also the browser as an attacker's tool: a page on another site, and a rebound name.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agentao.gateway.config import ApiKey
from tests.gateway.conftest import DEFAULT_SCRIPT, LiveGateway
from tests.gateway.test_tasks import start_task

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # evil.example is the attacker's site; it resolves to loopback, as after DNS rebinding.
    "--host-resolver-rules=MAP evil.example 127.0.0.1",
]

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM),
    reason=f"no browser: {CHROMIUM} is missing (apt-get install chromium)",
)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, shared_gateway):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(30_000)  # generous: CI machines are often busy
    page.goto(shared_gateway.url)
    page.wait_for_selector("body[data-ready='true']")
    yield page
    context.close()


def send(page, text: str) -> None:
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")


def test_chat_with_thoughts_tools_diff_plan_and_approval(page, shared_gateway) -> None:
    work = Path(shared_gateway.config.agents[0].cwd)
    (work / "hello.txt").unlink(missing_ok=True)
    assert page.locator("#agent option").first.inner_text() == "agentao"
    page.select_option("#policy", "ask")
    send(page, "please write the file")

    ask = page.locator(".permission").last
    ask.wait_for()
    assert "Write hello.txt" in ask.inner_text()
    ask.locator("button.allow").click()

    turn = page.locator(".turn").last
    turn.locator(".ended").wait_for()
    assert "stop reason: end_turn" in turn.locator(".ended").inner_text()
    assert "approved (human)" in ask.locator(".decision").inner_text()
    tool = turn.locator(".tool[data-status='completed']")
    assert "Write hello.txt" in tool.locator(".title").inner_text()
    assert tool.locator(".diff .add").first.inner_text() == "+ hi"
    thought = turn.locator("details.thought")
    assert thought.get_attribute("open") is None  # collapsed until clicked
    thought.locator("summary").click()
    assert thought.locator("div").inner_text() == "I will write the file."
    assert turn.locator(".text").last.inner_text() == "Wrote hello.txt."
    plan = page.locator("#plan-entries li")
    assert plan.all_inner_texts() == ["Write hello.txt", "Report back"]
    assert (work / "hello.txt").read_text() == "hi\n"

    send(page, "and now?")  # the same conversation goes on
    page.locator(".turn").nth(1).locator(".ended").wait_for()
    assert page.locator(".turn").nth(1).locator(".text").inner_text() == "Answer one."

    page.click("#new-chat")
    assert page.locator(".turn").count() == 0
    session = page.locator("#sessions li", has_text="please write the file").first
    session.click()
    page.locator(".turn").nth(1).locator(".ended").wait_for()
    assert page.locator(".turn").count() == 2
    assert page.locator(".turn").first.locator(".user").inner_text() == "please write the file"
    assert "2 turns" in page.locator("#sessions li.current small").inner_text()


def test_rejecting_a_permission_fails_the_tool(page) -> None:
    page.select_option("#policy", "ask")
    send(page, "write it again")
    ask = page.locator(".permission").last
    ask.locator("button.reject").click()
    turn = page.locator(".turn").last
    turn.locator(".ended").wait_for()
    assert turn.locator(".tool").get_attribute("data-status") == "failed"
    assert "rejected (human)" in ask.locator(".decision").inner_text()


def test_stop_button_cancels(page) -> None:
    send(page, "slow please")
    page.locator(".turn .text").first.wait_for()
    page.click("#stop")
    ended = page.locator(".turn .ended")
    ended.wait_for()
    assert "cancelled" in ended.inner_text()


def test_the_ui_with_a_key(browser, gateway_factory) -> None:
    secret = "sk-ui-\u00e9t\u00e9"  # not ASCII: the subprotocol carries it base64url-encoded
    digest = hashlib.sha256(secret.encode()).hexdigest()
    gw = gateway_factory(keys=(ApiKey("ui", digest, ceiling="all"),))
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(gw.url)
    page.fill("#key-input", secret)
    page.press("#key-input", "Enter")
    page.wait_for_selector("body[data-ready='true']")
    with page.expect_request(lambda r: r.url.endswith("/v1/tasks")) as request:
        send(page, "hello")
    assert request.value.headers["x-agentao-client"] == "web"  # never a "simple" request
    ended = page.locator(".turn .ended")
    ended.wait_for()  # the task stream opened with the key as a subprotocol
    assert "end_turn" in ended.inner_text()
    context.close()


# ---- another site attacks the gateway through the user's browser -------------------------

PWNED = "pwned.txt"
SHELL_SCRIPT = [
    {
        "match": "pwn",
        "tool_calls": [{"name": "run_shell_command", "arguments": {"command": f"touch {PWNED}"}}],
    },
    {"match": "pwn", "text": "Done."},
    *DEFAULT_SCRIPT,
]


@pytest.fixture
def evil_site() -> Iterator[int]:
    """A second web server on loopback: the attacker's page (its port)."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b"<!doctype html><title>cat pictures</title>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_page_on_another_site_gets_nothing_done(browser, gateway_factory, evil_site) -> None:
    gw: LiveGateway = gateway_factory(script=SHELL_SCRIPT)
    work = Path(gw.config.agents[0].cwd)
    watched = start_task(gw, "hello")  # a task the page will try to watch
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(f"http://evil.example:{evil_site}/")
    target = f"127.0.0.1:{gw.port}"

    # A "simple" cross-origin POST (text/plain, no preflight) asking for every permission.
    page.evaluate(
        """async (target) => {
            const body = JSON.stringify({model: "agentao", x_permission_policy: "all",
                messages: [{role: "user", content: "pwn this machine"}]});
            await fetch(`http://${target}/v1/chat/completions`, {method: "POST",
                mode: "no-cors", headers: {"Content-Type": "text/plain"}, body});
        }""",
        target,
    )
    # A WebSocket to a task's stream: browsers let any page open one, with its Origin.
    seen = page.evaluate(
        """(url) => new Promise((resolve) => {
            const ws = new WebSocket(url);
            ws.onmessage = (m) => { resolve("read: " + m.data); ws.close(); };
            ws.onerror = () => resolve("refused");
        })""",
        f"ws://{target}{watched['stream_url']}",
    )
    # DNS rebinding: the attacker's name now points at the gateway, port and all.
    rebound = page.goto(f"http://evil.example:{gw.port}/")
    context.close()

    assert seen == "refused"
    assert rebound is not None and rebound.status == 421
    assert not (work / PWNED).exists()
    with gw.http() as http:
        convs = http.get("/v1/conversations").json()["data"]
    assert [c["id"] for c in convs] == [watched["conversation_id"]]  # ours, and no other
