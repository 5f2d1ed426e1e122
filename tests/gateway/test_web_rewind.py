"""Rewind to here in the web UI (webui/src/rewind.js, gateway/rewinds.py), in real headless
Chromium at 1280 and 390 px wide: "Rewind" on an earlier turn shows the agent's dry run
(a file changed outside the agent listed with why, overwritten only when ticked), restores
the files, and goes on from before that prompt on a fork, the prompt back in the box; the
model is then told exactly the turns before it. Screenshots go under the test's tmp path."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tests.e2e.test_agent_fork import _user_texts
from tests.fakes.fake_llm import FakeLLM, FakeToolCall
from tests.gateway.test_web import (  # noqa: F401 (fixtures)
    browser,
    chromium,
    last_turn,
    send,
)
from tests.gateway.test_web_edit import WIDTHS, gateway, page  # noqa: F401 (fixtures)

if TYPE_CHECKING:
    from playwright.sync_api import Page


def _write(fake_llm: FakeLLM, path: str, content: str, answer: str) -> None:
    fake_llm.reply(tool_calls=[FakeToolCall("write_file", {"file_path": path, "content": content})])
    fake_llm.reply(answer)


@WIDTHS
def test_rewind_to_here_restores_the_files_and_goes_on_from_before_that_prompt(
    page: Page,  # noqa: F811
    fake_llm: FakeLLM,
    viewport: dict[str, int],
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    (work / "a.txt").write_text("before\n")
    fake_llm.reply("Answer 1.")
    _write(fake_llm, "a.txt", "edited\n", "Answer 2.")
    _write(fake_llm, "b.txt", "new\n", "Answer 3.")
    fake_llm.reply("Answer again.")
    for n in range(1, 4):
        send(page, f"message {n}")
        last_turn(page).locator(".text p", has_text=f"Answer {n}.").wait_for()
    source = page.evaluate("location.hash")
    (work / "b.txt").write_text("the person's\n")  # changed outside the agent
    second = page.locator(".turn").nth(1)
    second.locator("button.rewind").click()
    panel = second.locator(".rewinder")
    panel.locator("li[data-action='conflict']").wait_for()
    assert panel.locator("li[data-action='restore'] code").inner_text() == "a.txt"
    assert "changed outside the agent" in panel.locator("li[data-action='conflict']").inner_text()
    page.screenshot(path=str(tmp_path / f"web-rewind-{viewport['width']}.png"))
    panel.get_by_role("button", name="Rewind to here").click()
    panel.locator(".error").wait_for()  # not ticked: nothing done
    assert (work / "a.txt").read_text() == "edited\n"
    panel.locator("label.force input").check()
    panel.get_by_role("button", name="Rewind to here").click()
    page.wait_for_function("() => document.querySelectorAll('.turn').length === 1")
    assert (work / "a.txt").read_text() == "before\n" and not (work / "b.txt").exists()
    assert page.locator("#prompt").input_value() == "message 2"
    assert page.evaluate("location.hash") not in ("", source)  # the fork is open
    page.press("#prompt", "Enter")
    last_turn(page).locator(".text p", has_text="Answer again.").wait_for()
    assert _user_texts(fake_llm.requests[-1].body) == ["message 1", "message 2"]
