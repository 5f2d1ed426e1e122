"""The web UI in a real browser: Debian's chromium, headless, driven by Playwright."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
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
