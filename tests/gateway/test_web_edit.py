"""Edit and resend in the web UI (webui/src/edit.js, gateway/forks.py), in real headless
Chromium at 1280 and 390 px wide: "Edit" on an earlier prompt, the edited prompt sent,
and the model told exactly the turns before it (also for a turn the page drew from the
source conversation while a fork is open) (the fake LLM records what it was sent).
Screenshots go under the test's tmp path (a copy of each is in docs/img/web-edit-*.png)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.e2e.test_agent_fork import _user_texts
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
    from playwright.sync_api import Browser, Page

WIDTHS = pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])


@pytest.fixture
def gateway(
    gateway_factory: Callable[..., LiveGateway], fake_llm: FakeLLM, tmp_path: Path
) -> LiveGateway:
    return gateway_factory(agents=(llm_spec(tmp_path, fake_llm.env()),))


@pytest.fixture
def page(browser: Browser, gateway: LiveGateway, viewport: dict[str, int]) -> Iterator[Page]:  # noqa: F811
    phone = viewport == PHONE
    page = open_page(browser, gateway.url, viewport=viewport, is_mobile=phone, has_touch=phone)
    yield page
    page.context.close()


@WIDTHS
def test_an_earlier_prompt_edited_is_resent_on_a_fork_holding_the_turns_before_it(
    page: Page, fake_llm: FakeLLM, viewport: dict[str, int], tmp_path: Path
) -> None:
    for n in range(1, 5):
        fake_llm.reply(f"Answer {n}.")
    fake_llm.reply("Answer to the edit.")
    fake_llm.reply("Answer from the start.")
    for n in range(1, 5):
        send(page, f"message {n}")
        last_turn(page).locator(".text p", has_text=f"Answer {n}.").wait_for()
    source = page.evaluate("location.hash")
    third = page.locator(".turn").nth(2)
    third.hover()  # on a desktop the button is there anyway; a phone has no hover
    third.locator("button.edit").click()
    editor = third.locator(".editor textarea")
    assert editor.input_value() == "message 3"
    editor.fill("message 3, edited")
    page.screenshot(path=str(tmp_path / f"web-edit-editing-{viewport['width']}.png"))
    editor.press("Enter")
    last_turn(page).locator(".text p", has_text="Answer to the edit.").wait_for()
    turns = page.locator(".turn .user")
    assert turns.all_inner_texts() == ["message 1", "message 2", "message 3, edited"]
    assert page.evaluate("location.hash") not in ("", source)  # the fork is open now
    assert _user_texts(fake_llm.requests[-1].body) == [
        "message 1",
        "message 2",
        "message 3, edited",
    ]
    page.screenshot(path=str(tmp_path / f"web-edit-{viewport['width']}.png"))
    first = page.locator(".turn").first  # drawn from the source: forked there, not here
    first.locator("button.edit").click()
    first.locator(".editor textarea").fill("message 1, again")
    first.locator(".editor button[type=submit]").click()
    last_turn(page).locator(".text p", has_text="Answer from the start.").wait_for()
    assert page.locator(".turn .user").all_inner_texts() == ["message 1, again"]
    assert _user_texts(fake_llm.requests[-1].body) == ["message 1, again"]
    page.evaluate("h => { location.hash = h; location.reload(); }", source)
    page.wait_for_selector("body[data-ready='true']")  # the source conversation, untouched
    page.locator(".turn .user", has_text="message 4").wait_for()
    assert page.locator(".turn .user").all_inner_texts() == [f"message {n}" for n in range(1, 5)]
