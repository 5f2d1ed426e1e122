"""The web UI in a real browser: Debian's chromium, headless, driven by Playwright.

Screenshots at 1280x900 and 390x844 go to `test-artifacts/` (git-ignored); with
AGENTAO_DOCS_SCREENSHOT=1 the desktop one also replaces `docs/img/web-ui.png` (README's).
Also the browser as an attacker's tool: a page on another site, a rebound name, and model
output written to run a script.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentao.gateway.config import AgentSpec, ApiKey, GatewayConfig
from tests.gateway.browser import require_chromium
from tests.gateway.conftest import DEFAULT_SCRIPT, LiveGateway, scripted_spec
from tests.gateway.test_tasks import start_task

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Locator, Page

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

ROOT = Path(__file__).resolve().parents[2]
RAW_AGENT = Path(__file__).with_name("raw_agent.py")  # an agent that is not ours
ARTIFACTS = ROOT / "test-artifacts"
DOCS_SCREENSHOT = ROOT / "docs" / "img" / "web-ui.png"
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}

# Model output a person should see rendered, and an injection that must stay text.
MARKDOWN = """Here is a **summary** of the files:

| file | lines |
|---|---|
| hello.txt | 1 |
| notes.txt | 12 |

```python
def greet(name):
    return f"hi {name}"
```

![tracker](http://127.0.0.1:9/track.png)
"""
INJECTION = (
    'Look: <img src=x onerror="alert(1); window.__pwned = 1">'
    "<script>alert(2); window.__pwned = 2</script>"
    '<a href="javascript:window.__pwned = 3">click</a> [more](javascript:window.__pwned=4)'
)
COMMAND = "touch made-by-a-script.txt"
RUN = {"name": "run_shell_command", "arguments": {"command": COMMAND}}
WEB_SCRIPT = [
    {"match": "command", "tool_calls": [RUN]},
    {"match": "command", "text": "Ran it."},
    {"match": "markdown", "text": MARKDOWN},
    {"match": "inject", "text": INJECTION},
    {"match": "tally", "text": "Counted.", "usage": {"input_tokens": 1234, "output_tokens": 56}},
    *DEFAULT_SCRIPT,
]


@pytest.fixture(scope="module")
def chromium() -> str:
    """Skipped without a browser, but failed under CI (`browser.py`)."""
    return require_chromium()


@pytest.fixture(scope="module")
def browser(chromium: str) -> Iterator[Browser]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def web_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveGateway]:
    tmp = tmp_path_factory.mktemp("web-gateway")
    config = GatewayConfig(agents=(scripted_spec(tmp, WEB_SCRIPT, processes=2),))
    live = LiveGateway(config, tmp / "gateway.sqlite3").start()
    yield live
    live.stop()


def open_page(browser: Browser, url: str, **context: Any) -> Page:
    ctx = browser.new_context(reduced_motion="reduce", **context)
    page = ctx.new_page()
    page.set_default_timeout(30_000)  # generous: CI machines are often busy
    page.goto(url)
    page.wait_for_selector("body[data-ready='true']")
    return page


@pytest.fixture
def page(browser: Browser, web_gateway: LiveGateway) -> Iterator[Page]:
    page = open_page(browser, web_gateway.url, viewport=DESKTOP)
    yield page
    page.context.close()


def send(page: Page, text: str) -> None:
    page.fill("#prompt", text)
    page.press("#prompt", "Enter")


def last_turn(page: Page) -> Locator:
    """The newest turn, once it has ended (or failed)."""
    page.wait_for_function(
        "() => { const t = [...document.querySelectorAll('.turn')].pop();"
        " return t && t.dataset.state !== 'running'; }"
    )
    return page.locator(".turn").last


def screenshot(page: Page, name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / name
    page.screenshot(path=str(path))
    return path


def test_chat_with_thoughts_tools_diff_plan_and_approval(
    page: Page, web_gateway: LiveGateway
) -> None:
    work = Path(web_gateway.config.agents[0].cwd)
    (work / "hello.txt").unlink(missing_ok=True)
    assert page.locator("#agent option").first.inner_text() == "agentao"
    page.select_option("#policy", "ask")
    send(page, "please write the file")

    ask = page.locator(".turn .permission").last
    ask.wait_for()
    assert "Write hello.txt" in ask.inner_text()
    intent = ask.locator(".intent dd").all_inner_texts()  # what it will write, and where
    assert [t.strip() for t in intent] == ["hello.txt", "hi"]
    assert re.fullmatch(r"\d:\d\d left", ask.locator(".countdown").inner_text())
    ask.locator("button.allow").click()

    turn = last_turn(page)
    assert turn.locator(".ended").count() == 0  # a normal end says nothing
    assert ask.locator(".decision").inner_text() == "Approved: a person in the web UI chose Allow"
    tool = turn.locator(".tool[data-status='completed']")
    assert "Write hello.txt" in tool.locator(".title").inner_text()
    assert tool.locator(".diff .add").first.inner_text() == "+ hi"
    thought = turn.locator("details.thought")
    assert thought.get_attribute("open") is None  # collapsed until clicked
    thought.locator("summary").click()
    assert thought.locator("div").inner_text() == "I will write the file."
    turn.locator(".text p", has_text="Wrote hello.txt.").wait_for()
    plan = page.locator("#plan-entries li")
    assert plan.all_inner_texts() == ["Write hello.txt", "Report back"]
    assert (work / "hello.txt").read_text() == "hi\n"
    assert "tokens" in page.locator("#usage-text").inner_text()  # the context meter
    # The list is read again once the turn has ended: wait for that reading, not the one
    # made when the turn started.
    page.locator("#sessions li.current small", has_text="1 turn ·").wait_for()

    send(page, "and now?")  # the same conversation goes on
    page.locator(".turn").nth(1).locator(".text p", has_text="Answer one.").wait_for()
    last_turn(page)

    page.click("#new-chat")
    assert page.locator(".turn").count() == 0
    session = page.locator("#sessions li", has_text="please write the file").first
    session.locator(".open-session").click()
    page.locator(".turn").nth(1).locator(".text p").wait_for()
    assert page.locator(".turn").count() == 2
    assert page.locator(".turn").first.locator(".user").inner_text() == "please write the file"
    page.locator("#sessions li.current small", has_text="2 turns ·").wait_for()
    page.reload()  # the open session is in the URL: it comes back
    page.wait_for_selector("body[data-ready='true']")
    assert page.locator(".turn").count() == 2


def test_rejecting_a_permission_fails_the_tool(page: Page) -> None:
    page.select_option("#policy", "ask")
    send(page, "write it again")
    ask = page.locator(".turn .permission").last
    ask.locator("button.reject").click()
    turn = last_turn(page)
    assert turn.locator(".tool").get_attribute("data-status") == "failed"
    assert ask.locator(".decision").inner_text() == "Rejected: a person in the web UI chose Reject"


def test_a_policy_reject_says_whose_it_was(page: Page) -> None:
    page.select_option("#policy", "reject")
    send(page, "write the file once more")
    decision = last_turn(page).locator(".decision")
    assert decision.inner_text() == (
        "Rejected: Write hello.txt (the gateway's permission policy for this request "
        "('reject') approves no tool calls)"
    )


def test_stop_button_and_escape_cancel(page: Page) -> None:
    send(page, "slow please")
    page.locator(".turn .text").first.wait_for()
    page.click("#stop")
    assert last_turn(page).locator(".ended").inner_text() == "Stopped."
    page.click("#new-chat")  # the script's slow answer is one per session
    send(page, "slow again please")
    page.locator(".turn .text").first.wait_for()
    page.keyboard.press("Escape")
    assert last_turn(page).locator(".ended").inner_text() == "Stopped."


def test_stop_reasons_in_words(page: Page) -> None:
    send(page, "refuse this")
    assert last_turn(page).locator(".ended").inner_text() == "The model declined to answer."
    send(page, "cutoff now")
    turn = last_turn(page)
    assert turn.get_attribute("data-stop-reason") == "max_tokens"
    assert turn.locator(".ended").inner_text() == (
        "The answer was cut off: the model reached its output limit."
    )


def test_shift_enter_is_a_new_line_and_the_agent_titles_the_session(page: Page) -> None:
    page.fill("#prompt", "Plan the trip")
    page.press("#prompt", "Shift+Enter")
    page.keyboard.type("with details on trains")
    assert page.input_value("#prompt") == "Plan the trip\nwith details on trains"
    assert page.locator(".turn").count() == 0  # nothing was sent
    page.press("#prompt", "Enter")
    assert last_turn(page).locator(".user").inner_text() == "Plan the trip\nwith details on trains"
    # The agent's session_info_update names the session (its first line); from the prompt
    # alone the title would be both lines, which the list shows until the turn has ended.
    page.locator("#sessions li.current .title", has_text=re.compile(r"^Plan the trip$")).wait_for()


def test_usage_is_shown_when_the_agent_reports_it(page: Page) -> None:
    assert page.locator("#usage").is_hidden()  # nothing reported yet
    send(page, "hello")
    turn = last_turn(page)
    assert turn.locator(".turn-usage").count() == 0  # the agent reported no token counts
    assert page.locator("#usage-text").inner_text().startswith("≈")  # the agent's estimate
    send(page, "tally it up")
    turn = last_turn(page)
    assert turn.locator(".turn-usage").inner_text() == "1.2k tokens in · 56 out"
    meter = page.locator("#usage-text").inner_text()
    assert re.fullmatch(r"\d[\d.]*k? / 128k tokens \(\d+%\)", meter), meter  # counted, not guessed
    page.click("#new-chat")
    assert page.locator("#usage").is_hidden()


def test_markdown_table_and_highlighted_code_with_a_copy_button(
    browser: Browser, web_gateway: LiveGateway
) -> None:
    page = open_page(
        browser,
        web_gateway.url,
        viewport=DESKTOP,
        permissions=["clipboard-read", "clipboard-write"],
    )
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    send(page, "markdown please")
    answer = last_turn(page).locator(".markdown")
    answer.locator("table").wait_for()
    assert answer.locator("th").all_inner_texts() == ["file", "lines"]
    assert answer.locator("td").all_inner_texts() == ["hello.txt", "1", "notes.txt", "12"]
    assert answer.locator("strong").inner_text() == "summary"
    block = answer.locator(".code-block")
    assert block.locator(".code-lang").inner_text() == "python"
    assert block.locator("code .hljs-keyword").first.inner_text() == "def"
    block.locator("button.copy").click()
    page.locator("button.copy", has_text="Copied").wait_for()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied == 'def greet(name):\n    return f"hi {name}"\n'
    # A markdown image is a link, never fetched: the page tells no third party anything.
    assert answer.locator("img").count() == 0
    assert answer.locator("a", has_text="tracker").get_attribute("href") == (
        "http://127.0.0.1:9/track.png"
    )
    assert not [u for u in requests if "track.png" in u]
    # Everything the page loaded came from the gateway: nothing from a CDN, so it works offline.
    origin = web_gateway.url.rstrip("/")
    assert requests and all(u.startswith(origin) or u.startswith("data:") for u in requests), (
        requests
    )
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(250, 250, 250)"
    desktop = screenshot(page, "web-desktop-1280x900.png")
    if os.environ.get("AGENTAO_DOCS_SCREENSHOT") == "1":
        shutil.copyfile(desktop, DOCS_SCREENSHOT)
    page.emulate_media(color_scheme="dark")  # the system's dark theme is followed
    assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(22, 24, 28)"
    screenshot(page, "web-desktop-dark-1280x900.png")
    page.context.close()


def test_model_output_never_runs_a_script(page: Page) -> None:
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    send(page, "inject something")
    answer = last_turn(page).locator(".markdown")  # an ended turn shows all of its answer
    text = answer.inner_text()
    assert '<img src=x onerror="alert(1); window.__pwned = 1">' in text  # shown as text
    assert "<script>" in text
    assert answer.locator("img, script").count() == 0
    for link in answer.locator("a").all():
        assert not (link.get_attribute("href") or "").startswith("javascript:")
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert dialogs == []


def test_the_page_allows_only_its_own_scripts(web_gateway: LiveGateway) -> None:
    """The second layer: were model output ever to become markup, no inline script or
    handler could run, and nothing could be loaded from elsewhere."""
    with web_gateway.http() as http:
        page = http.get("/")
        bundle = http.get("/ui/app.js")
    assert page.status_code == 200 and bundle.status_code == 200
    csp = page.headers["content-security-policy"]
    assert "script-src 'self';" in csp and "default-src 'self';" in csp
    assert "unsafe-inline" not in csp
    assert page.headers["x-content-type-options"] == "nosniff"


def test_model_picker_lists_the_agents_models(page: Page) -> None:
    send(page, "hello")  # the agent lists its models with its first session
    last_turn(page)
    page.locator("#model option[value='scripted/agentao-script']").wait_for(state="attached")
    page.select_option("#model", "scripted/agentao-script")
    page.click("#new-chat")
    with page.expect_request(lambda r: r.url.endswith("/v1/tasks")) as request:
        send(page, "hello with a model")
    assert request.value.post_data_json["agent"] == "agentao/scripted/agentao-script"
    last_turn(page).locator(".text p").wait_for()


def test_a_question_from_an_api_caller_waits_on_the_landing_page(
    browser: Browser, web_gateway: LiveGateway
) -> None:
    work = Path(web_gateway.config.agents[0].cwd)
    answer: dict[str, Any] = {}

    def api_caller() -> None:  # a program using the OpenAI SDK, its policy "ask"
        reply = web_gateway.openai().chat.completions.create(
            model="agentao",
            messages=[
                {"role": "system", "content": "You are a build bot. Be terse."},
                {"role": "user", "content": "run a command, from a script"},
            ],
            extra_headers={"X-Permission-Policy": "ask"},
        )
        answer["text"] = reply.choices[0].message.content

    caller = threading.Thread(target=api_caller)
    caller.start()
    page = open_page(browser, web_gateway.url, viewport=DESKTOP)
    card = page.locator("#pending .permission")
    card.wait_for()  # on the landing page, no session opened
    page.reload()  # and again after a reload
    page.wait_for_selector("body[data-ready='true']")
    card.wait_for()
    assert card.locator(".kind").inner_text() == "execute"
    assert card.locator(".intent .command").inner_text() == f"$ {COMMAND}"  # the command
    assert re.fullmatch(r"\d:\d\d left", card.locator(".countdown").inner_text())
    waiting = page.locator("#sessions li.waiting")
    assert waiting.locator(".badge").inner_text() == "1"
    # The caller's words make a short title, without the system message before them.
    assert waiting.locator(".title").inner_text() == "run a command, from a script"
    assert page.title().startswith("(1) ")
    screenshot(page, "web-permission-1280x900.png")
    card.locator("button.allow").click()
    caller.join(30)
    assert answer["text"] == "Ran it."
    assert (work / "made-by-a-script.txt").exists()
    page.locator("#pending").wait_for(state="hidden")
    page.context.close()


def test_a_permission_card_shows_the_diff_the_agent_sent(
    browser: Browser, gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    raw = AgentSpec("raw", (sys.executable, str(RAW_AGENT)), cwd=str(tmp_path))
    gw = gateway_factory(agents=(raw,))
    page = open_page(browser, gw.url, viewport=DESKTOP)
    page.select_option("#policy", "ask")
    send(page, "edit the notes")
    card = page.locator(".turn .permission")
    card.wait_for()
    assert card.locator(".ask-title").inner_text() == "Permission needed: Edit notes.txt"
    diff = card.locator(".intent .diff")  # the change itself, not its arguments
    assert diff.locator(".path").inner_text() == "notes.txt"
    assert diff.locator(".del").all_inner_texts() == ["- remember the milk"]
    assert diff.locator(".add").all_inner_texts() == ["+ remember the oat milk"]
    card.locator("button.allow").click()
    assert last_turn(page).locator(".text").inner_text() == "raw was told allow (text)"
    page.context.close()


def test_the_browser_shows_the_view_folded_in_python(
    browser: Browser, gateway_factory: Callable[..., LiveGateway], tmp_path: Path
) -> None:
    """One tool call sent three times (pending, in_progress with a diff, completed with
    output), a plan and usage: the page draws exactly the items the gateway folded."""
    raw = AgentSpec("raw", (sys.executable, str(RAW_AGENT)), cwd=str(tmp_path))
    gw = gateway_factory(agents=(raw,))
    page = open_page(browser, gw.url, viewport=DESKTOP)
    send(page, "steps please")
    turn = last_turn(page)
    conversation = page.evaluate("location.hash.slice(1)")
    with gw.http() as http:
        items = http.get(f"/v1/conversations/{conversation}/view").json()["items"]
    (tool,) = [item for item in items if item["kind"] == "tool_call"]
    plan = next(item for item in items if item["id"] == "plan")
    drawn = turn.locator(".tool")
    assert drawn.count() == 1  # three updates, one tool call
    assert drawn.get_attribute("data-status") == tool["status"] == "completed"
    assert drawn.locator(".title").inner_text() == tool["title"]
    assert drawn.locator(".kind").inner_text() == tool["toolKind"]
    (diff,) = tool["diffs"]
    assert drawn.locator(".diff .path").inner_text() == diff["path"]
    shown = drawn.locator(".diff .del, .diff .add, .diff .ctx").all_text_contents()
    assert shown == [f"{line[0]} {line[1:]}" for line in diff["lines"] if line[0] in "-+ "]
    assert drawn.locator(".body > pre").inner_text() == tool["output"]
    assert page.locator("#plan-entries li").all_inner_texts() == [
        e["content"] for e in plan["entries"]
    ]
    assert page.locator("#usage-text").inner_text() == "5.0k / 100k tokens (5%)"
    page.reload()  # drawn again from GET /view: the same
    page.wait_for_selector("body[data-ready='true']")
    assert page.locator(".turn .tool[data-status='completed']").count() == 1
    page.context.close()


def test_sessions_are_searched_renamed_and_deleted(page: Page, web_gateway: LiveGateway) -> None:
    zebra = start_task(web_gateway, "plan the zebra crossing")
    start_task(web_gateway, "count the okapis")
    page.reload()
    page.wait_for_selector("body[data-ready='true']")
    items = page.locator("#sessions li")
    item = items.filter(has_text="plan the zebra crossing")
    assert item.locator("time").get_attribute("title")  # the full time on hover
    assert item.locator("time").inner_text() == "just now"

    page.fill("#search", "ZEBRA")
    page.locator("#sessions li", has_text="count the okapis").wait_for(state="detached")
    assert items.count() == 1

    item.locator("button.rename").click()
    page.fill("#sessions .rename-input", "Zebra plans")
    page.press("#sessions .rename-input", "Enter")
    item = page.locator(f"#sessions li[data-conversation-id='{zebra['conversation_id']}']")
    item.locator(".title", has_text="Zebra plans").wait_for()
    page.reload()
    page.wait_for_selector("body[data-ready='true']")
    assert item.locator(".title").inner_text() == "Zebra plans"  # stored

    item.locator(".open-session").click()
    page.locator(".turn .user", has_text="plan the zebra crossing").wait_for()
    delete = item.locator("button.delete")
    delete.click()
    assert delete.inner_text() == "Delete?"  # asks once
    delete.click()
    item.wait_for(state="detached")
    assert page.locator(".turn").count() == 0  # the open session went with it
    with web_gateway.http() as http:
        gone = http.get(f"/v1/conversations/{zebra['conversation_id']}")
    assert gone.status_code == 404


def test_phone_width_the_sidebar_collapses(browser: Browser, web_gateway: LiveGateway) -> None:
    page = open_page(browser, web_gateway.url, viewport=PHONE, is_mobile=True, has_touch=True)
    sidebar = page.locator("#sidebar")
    assert not sidebar.is_visible() or sidebar.bounding_box()["x"] + 10 < 0
    log = page.locator("#composer").bounding_box()
    assert log["width"] >= PHONE["width"] - 1  # the conversation gets the whole width
    width = "document.documentElement.scrollWidth"
    send(page, "markdown please")
    last_turn(page).locator(".markdown table").wait_for()
    assert page.evaluate(width) <= PHONE["width"]  # nothing scrolls the page sideways
    screenshot(page, "web-phone-390x844.png")
    page.click("#menu")
    assert sidebar.bounding_box()["x"] == 0
    screenshot(page, "web-phone-sessions-390x844.png")
    page.locator("#sessions li .open-session").first.click()  # opening one closes it
    page.wait_for_function("!document.body.classList.contains('sidebar-open')")
    page.context.close()


def test_the_ui_with_a_key(browser: Browser, gateway_factory: Callable[..., LiveGateway]) -> None:
    secret = "sk-ui-\u00e9t\u00e9"  # not ASCII: the subprotocol carries it base64url-encoded
    digest = hashlib.sha256(secret.encode()).hexdigest()
    gw = gateway_factory(keys=(ApiKey("ui", digest, ceiling="all"),))
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(gw.url)
    assert page.locator("#key-message").inner_text() == "This gateway needs an API key."
    page.fill("#key-input", "sk-wrong")
    page.press("#key-input", "Enter")
    message = page.locator("#key-message", has_text="refused this key")
    message.wait_for()  # a wrong key is said to be wrong, not silently asked for again
    assert "invalid API key" in message.inner_text()
    page.fill("#key-input", secret)
    page.press("#key-input", "Enter")
    page.wait_for_selector("body[data-ready='true']")
    with page.expect_request(lambda r: r.url.endswith("/v1/tasks")) as request:
        send(page, "hello")
    assert request.value.headers["x-agentao-client"] == "web"  # never a "simple" request
    last_turn(page).locator(".text p").wait_for()  # the stream opened with the key
    context.close()


def test_a_keyless_gateway_s_ui_opens_through_its_one_time_login_link(
    browser: Browser, gateway_factory: Callable[..., LiveGateway]
) -> None:
    gw = gateway_factory(local_token="the-local-token-of-this-test")
    stranger = browser.new_context()  # no link: the UI cannot act, and asks for a key
    page = stranger.new_page()
    page.set_default_timeout(30_000)
    page.goto(gw.url)
    assert page.locator("#key-message").inner_text() == "This gateway needs an API key."
    stranger.close()

    link = gw.login_link()
    page = open_page(browser, link, viewport=DESKTOP)  # redirected to the UI, logged in
    assert page.url == f"{gw.url}/"
    cookie = next(c for c in page.context.cookies() if c["name"] == "agentao_session")
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    assert page.evaluate("document.cookie") == ""  # no script of the page reads it
    send(page, "hello")  # a POST and the task stream's WebSocket, on the cookie alone
    assert last_turn(page).locator(".text").inner_text() == "Answer one."
    page.context.close()

    again = browser.new_context()  # the link was spent: a second use gets nothing
    reply = again.request.get(link, max_redirects=0)
    assert reply.status == 401 and reply.json()["error"]["code"] == "login_link_invalid"
    again.close()


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


def test_a_page_on_another_site_gets_nothing_done(
    browser: Browser, gateway_factory: Callable[..., LiveGateway], evil_site: int
) -> None:
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
