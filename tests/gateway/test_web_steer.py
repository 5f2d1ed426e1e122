"""Typing while the agent works, in the web UI (issue 25), in real Chromium at 1280 and 390 px.

The prompt box stays usable while a turn runs. With an agent that steers (ours), Enter sends
the words into the running turn (the task stream's `steer` frame, gateway/steer.py): the turn
shows them as a user line where the agent's `user_message_chunk` put them, and no new turn
starts. With one that does not (raw_agent.py), they are queued under the composer and sent as
the next prompt when the turn ends; ✕ or Escape drops one.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from agentao.gateway import tasks
from agentao.gateway.config import AgentSpec
from tests.fakes.fake_llm import FakeLLM
from tests.gateway.conftest import LiveGateway, llm_spec
from tests.gateway.test_web import (  # noqa: F401 (fixtures)
    DESKTOP,
    PHONE,
    browser,
    chromium,
    last_turn,
    open_page,
    send,
)

if TYPE_CHECKING:
    from playwright.sync_api import APIResponse, Browser, Page, Route

pytestmark = pytest.mark.timeout(90)
RAW_AGENT = Path(__file__).with_name("raw_agent.py")  # an agent that does not steer
WIDTHS = pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])


@pytest.fixture
def page_of(browser: Browser, viewport: dict[str, int]) -> Iterator[Callable[[str], Page]]:  # noqa: F811
    pages: list[Page] = []

    def make(url: str) -> Page:
        phone = viewport == PHONE
        page = open_page(browser, url, viewport=viewport, is_mobile=phone, has_touch=phone)
        pages.append(page)
        return page

    yield make
    for page in pages:
        page.context.close()


def turn_lines(page: Page) -> list[str]:
    """The newest turn's user lines and answer text, in the order drawn."""
    return (
        page.locator(".turn").last.locator(".assistant > .user, .assistant .text").all_inner_texts()
    )


@WIDTHS
def test_words_typed_while_the_turn_runs_steer_it(
    gateway_factory: Callable[..., LiveGateway],
    fake_llm: FakeLLM,
    page_of: Callable[[str], Page],
    tmp_path: Path,
    viewport: dict[str, Any],
) -> None:
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))
    page = page_of(gw.url)
    gate = fake_llm.hold("Working on it.")
    fake_llm.reply("Bye then.")
    send(page, "do the thing")
    fake_llm.wait_requests(1)  # the turn runs: its model request is held
    assert page.locator("#prompt").is_editable() and page.locator("#send").is_enabled()
    send(page, "and then say bye")
    page.locator("#status", has_text="the agent reads it").wait_for()  # injected
    assert page.locator("#prompt").input_value() == "" and page.locator("#queued").is_hidden()
    gate.set()
    turn = last_turn(page)
    assert turn.get_attribute("data-state") == "ended"
    steered = turn.locator(".assistant > .user.steered")
    assert steered.inner_text() == "and then say bye"
    assert turn_lines(page) == ["Working on it.", "and then say bye", "Bye then."]
    assert page.locator(".turn").count() == 1  # inside the turn, not a turn of its own
    assert fake_llm.requests[1].body["messages"][-1]["content"] == "and then say bye"
    page.screenshot(path=str(tmp_path / f"web-steer-{viewport['width']}.png"))


@pytest.mark.parametrize("viewport", [DESKTOP], ids=["1280"])
def test_words_typed_while_the_turns_stream_still_opens_steer_it(
    gateway_factory: Callable[..., LiveGateway],
    fake_llm: FakeLLM,
    page_of: Callable[[str], Page],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seen once under load: the turn ran, but the page's socket to it was still opening
    when words were typed, so they were queued as the next prompt. Here the socket stays
    opening (the gateway looks the task up before it accepts) until the words are in."""
    looked_up, accept = tasks._task, threading.Event()

    async def task_after_the_words(gw: Any, principal: Any, task_id: str) -> Any:
        await asyncio.to_thread(accept.wait, 30)
        return await looked_up(gw, principal, task_id)

    monkeypatch.setattr(tasks, "_task", task_after_the_words)
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))
    page = page_of(gw.url)
    gate = fake_llm.hold("Working on it.")
    fake_llm.reply("Bye then.")
    send(page, "do the thing")
    fake_llm.wait_requests(1)  # the turn runs; the page's socket to it is still opening
    send(page, "and then say bye")
    page.wait_for_function("() => document.querySelector('#prompt').value === ''")  # taken
    accept.set()
    the_words_steer_the_turn(page, gate)


@pytest.mark.parametrize("viewport", [DESKTOP], ids=["1280"])
def test_words_typed_while_the_prompt_is_still_being_sent_steer_its_turn(
    gateway_factory: Callable[..., LiveGateway],
    fake_llm: FakeLLM,
    page_of: Callable[[str], Page],
    tmp_path: Path,
) -> None:
    """The gateway answers a prompt once its turn has started and been stored, which on a
    busy store comes after the agent is at work. Words typed before that answer must go to
    that turn, not start a turn (and a conversation) of their own. Here the browser holds the
    answer until the words are in."""
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))
    page = page_of(gw.url)
    gate = fake_llm.hold("Working on it.")
    fake_llm.reply("Bye then.")
    held = send_held(page, "do the thing")
    fake_llm.wait_requests(1)  # the turn runs; the page has not heard of it yet
    send(page, "and then say bye")
    page.wait_for_function("() => document.querySelector('#prompt').value === ''")  # taken
    route, answer = held[0]
    route.fulfill(response=answer)
    the_words_steer_the_turn(page, gate)


def the_words_steer_the_turn(page: Page, gate: threading.Event) -> None:
    """The words typed went into the held turn: shown as steered, not queued, not a turn
    of their own; then the turn ends with them between its two answers."""
    steered = page.locator("#status", has_text="the agent reads it")
    elsewhere = page.locator("#queued").filter(visible=True).or_(page.locator(".turn").nth(1))
    steered.or_(elsewhere).wait_for()
    assert steered.is_visible() and elsewhere.count() == 0
    gate.set()
    assert last_turn(page).get_attribute("data-state") == "ended"
    assert turn_lines(page) == ["Working on it.", "and then say bye", "Bye then."]


@pytest.mark.parametrize("viewport", [DESKTOP], ids=["1280"])
def test_a_conversation_left_while_its_prompt_is_sent_does_not_pull_the_page_back(
    gateway_factory: Callable[..., LiveGateway],
    fake_llm: FakeLLM,
    page_of: Callable[[str], Page],
    tmp_path: Path,
) -> None:
    """New chat clicked before the gateway answered the prompt: the answer must not make
    the page the old conversation's again (its id in the URL, its turn watched, the next
    prompt sent there). The turn runs on; it is the old conversation's to show."""
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))
    page = page_of(gw.url)
    gate = fake_llm.hold("Working on it.")
    fake_llm.reply("A new chat.")
    held = send_held(page, "do the thing")
    fake_llm.wait_requests(1)
    page.click("#new-chat")
    route, answer = held[0]
    with page.expect_request("**/v1/conversations*"):  # the list, once the answer is read
        route.fulfill(response=answer)
    assert page.evaluate("location.hash") == ""
    assert page.locator("#stop").is_hidden() and page.locator(".turn").count() == 0
    send(page, "hello")
    assert last_turn(page).locator(".assistant .text").inner_text() == "A new chat."
    first = answer.json()["conversation_id"]
    assert fake_llm.requests[1].body["messages"][-1]["content"] == "hello"
    assert page.evaluate("location.hash") not in ("", f"#{first}")  # a conversation of its own
    gate.set()


@pytest.mark.parametrize("viewport", [DESKTOP], ids=["1280"])
def test_a_prompt_still_being_sent_can_be_stopped(
    gateway_factory: Callable[..., LiveGateway],
    fake_llm: FakeLLM,
    page_of: Callable[[str], Page],
    tmp_path: Path,
) -> None:
    """Stop (the button, or Escape) before the gateway answered the prompt: the turn the
    gateway started is cancelled once the page knows it, not left running."""
    gw = gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))
    page = page_of(gw.url)
    gate = fake_llm.hold("Working on it.")
    held = send_held(page, "do the thing")
    fake_llm.wait_requests(1)
    page.click("#stop")  # shown while the prompt is sent
    route, answer = held[0]
    route.fulfill(response=answer)
    assert last_turn(page).locator(".ended").inner_text() == "Stopped."
    with gw.http() as http:
        frames = http.get(f"/v1/tasks/{answer.json()['id']}/events").json()["data"]
    assert frames[-1]["type"] == "task-ended" and frames[-1]["stopReason"] == "cancelled"
    gate.set()


def send_held(page: Page, text: str) -> list[tuple[Route, APIResponse]]:
    """Send `text`; the gateway gets the POST and answers it, but the page gets that answer
    only when the test fulfils the route. Later POSTs go through."""
    held: list[tuple[Route, APIResponse]] = []

    def hold(route: Route) -> None:
        if held:
            route.continue_()
        else:
            held.append((route, route.fetch()))

    page.route("**/v1/tasks", hold)
    send(page, text)
    while not held:  # the handler runs inside Playwright's calls: give it some
        page.wait_for_timeout(20)
    return held


@WIDTHS
def test_words_for_an_agent_that_does_not_steer_wait_for_the_turn(
    gateway_factory: Callable[..., LiveGateway],
    page_of: Callable[[str], Page],
    tmp_path: Path,
    viewport: dict[str, Any],
) -> None:
    spec = AgentSpec("raw", (sys.executable, str(RAW_AGENT)), cwd=str(tmp_path))
    gw = gateway_factory(agents=(spec,))
    page = page_of(gw.url)
    send(page, "edit please")  # the turn waits for a person's answer
    ask = page.locator(".turn .permission").last
    ask.wait_for()
    for words in ("first words", "second words", "third words"):
        send(page, words)
        page.locator("#queued .queued-text", has_text=words).wait_for()
    page.get_by_role("button", name="Drop the queued prompt: second words").click()
    page.locator("#prompt").press("Escape")  # drops the last one, does not stop the turn
    assert page.locator("#queued .queued-text").all_inner_texts() == ["first words"]
    page.screenshot(path=str(tmp_path / f"web-queued-{viewport['width']}.png"))
    ask.locator("button.reject").click()
    page.locator(".turn").nth(1).wait_for()  # the queued words: the next turn
    assert page.locator(".turn").first.get_attribute("data-stop-reason") == "end_turn"
    second = last_turn(page)
    assert second.locator(":scope > .user").inner_text() == "first words"
    assert "raw says hi" in second.locator(".text").inner_text()
    assert page.locator("#queued").is_hidden() and page.locator(".turn").count() == 2
