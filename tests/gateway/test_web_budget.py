"""The key's budgets in the web UI's sidebar (webui/src/budget.js, `GET /v1/keys/me`), in
real headless Chromium: the line shows today's spend against the budgets, is read again
after a turn, and says when the day's budget is spent; a key without a budget shows none."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from agentao.gateway.config import ApiKey
from agentao.gateway.prices import Price, Prices
from tests.gateway.conftest import LiveGateway
from tests.gateway.test_web import (  # noqa: F401 (fixtures)
    DESKTOP,
    browser,
    chromium,
    last_turn,
    send,
)

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


def keyed_page(browser: Browser, gw: LiveGateway, secret: str) -> Page:  # noqa: F811
    """The UI opened with `secret` already typed (kept in this browser, as api.js keeps it)."""
    context = browser.new_context(viewport=DESKTOP, reduced_motion="reduce")
    context.add_init_script(f"localStorage.setItem('agentao-key', {secret!r})")
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.goto(gw.url)
    page.wait_for_selector("body[data-ready='true']")
    return page


def test_the_sidebar_shows_today_s_spend_against_the_key_s_budgets(
    browser: Browser,  # noqa: F811
    gateway_factory: Callable[..., LiveGateway],
) -> None:
    def key(name: str, **budgets: object) -> ApiKey:
        digest = hashlib.sha256(f"sk-{name}".encode()).hexdigest()
        return ApiKey(name, digest, ceiling="all", policy="all", **budgets)  # type: ignore[arg-type]

    keys = (key("ui", tokens_per_day=1, usd_per_day=2.0), key("free"))
    gw = gateway_factory(keys=keys, prices=Prices({"agentao": Price(1000.0, 1000.0)}))
    page = keyed_page(browser, gw, "sk-ui")
    line = page.locator("#budget")
    assert line.inner_text() == "Today: 0 / 1 tokens · $0.0000 / $2.00"
    assert line.get_attribute("data-spent") == "no"
    send(page, "hello")
    last_turn(page).locator(".text p").wait_for()
    page.wait_for_selector("#budget[data-spent='yes']")  # read again once the turn ended
    spent = gw.run(gw.gateway.budgets.spent("ui"))
    assert line.inner_text() == f"Today: {spent.tokens} / 1 tokens · ${spent.usd:.4f} / $2.00"
    assert "spent" in (line.get_attribute("title") or "")
    page.context.close()
    free = keyed_page(browser, gw, "sk-free")  # no budget: no line
    assert free.locator("#budget").is_hidden()
    free.context.close()
