"""The web UI draws a subagent (issue 25) under the parent's `task` tool call: collapsed,
with its title and state; opened, its own words and tool calls, and its own children
nested alike. Real headless Chromium at
1280 and 390 px wide, our agent scripted to delegate."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.gateway.conftest import LiveGateway, scripted_spec
from tests.gateway.test_children import DELEGATE
from tests.gateway.test_children_calls import nesting_gateway
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


@pytest.fixture
def page(
    browser: Browser,  # noqa: F811
    gateway_factory: Callable[..., LiveGateway],
    tmp_path: Path,
    viewport: dict[str, int],
) -> Iterator[Page]:
    gw = gateway_factory(agents=(scripted_spec(tmp_path, DELEGATE),))
    phone = viewport == PHONE
    page = open_page(browser, gw.url, viewport=viewport, is_mobile=phone, has_touch=phone)
    yield page
    page.context.close()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])
def test_a_child_is_drawn_collapsed_under_the_parents_task_call(
    page: Page, viewport: dict[str, int], tmp_path: Path
) -> None:
    send(page, "delegate it")
    turn = last_turn(page)
    turn.locator(".text p", has_text="parent done").wait_for()
    call = turn.locator("details.tool", has_text="Subagent: survey")
    child = call.locator("xpath=following-sibling::div[contains(@class,'kids')][1]").locator(
        "details.subagent"
    )
    child.wait_for()
    assert child.locator("summary .title").inner_text() == "survey"
    assert child.get_attribute("data-state") == "idle"
    assert child.locator("summary .status").inner_text() == "done"
    assert child.get_attribute("open") is None  # collapsed by default
    words = child.locator(".text", has_text="the child's words")
    assert words.is_hidden()
    # the parent's answer is the parent's words alone
    assert turn.locator(".assistant > .text").all_inner_texts() == ["parent done"]
    child.locator("summary").click()
    words.wait_for()
    box = child.bounding_box()
    assert box is not None and box["x"] + box["width"] <= viewport["width"]
    page.screenshot(path=str(tmp_path / f"web-subagent-{viewport['width']}.png"))


@pytest.fixture
def nested_page(
    browser: Browser,  # noqa: F811
    gateway_factory: Callable[..., LiveGateway],
    tmp_path: Path,
) -> Iterator[Page]:
    gw = nesting_gateway(gateway_factory, tmp_path)
    page = open_page(browser, gw.url, viewport=DESKTOP)
    yield page
    page.context.close()


def test_a_grandchild_is_drawn_inside_its_parent_child(nested_page: Page) -> None:
    page = nested_page
    send(page, "nest it")
    turn = last_turn(page)
    turn.locator(".text p", has_text="parent done").wait_for()
    outer = turn.locator(".kids > details.subagent")
    assert outer.locator("> summary .title").inner_text() == "outer"
    outer.locator("> summary").click()
    inner = outer.locator("> .body > details.subagent")
    inner.wait_for()
    assert inner.locator("> summary .title").inner_text() == "inner"
    assert inner.locator("> summary .status").inner_text() == "done"
    words = inner.locator(".text", has_text="grandchild words")
    assert words.is_hidden()
    inner.locator("> summary").click()
    words.wait_for()
    assert outer.locator("> .body > .text").all_inner_texts() == ["child words"]
