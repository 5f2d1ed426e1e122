"""The agent's own question (`ask_user`) in the web UI (issue 25; asking.py, questions.js),
in real headless Chromium at 1280 and 390 px wide: drawn in its turn and pinned above the
prompt like a permission card, answered there with a text box and Send, and the turn goes
on with the answer; another session's waits in the banner at the top; a page that shows
a question holds its deadline off. Screenshots go under the test's tmp path."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from websockets.sync.client import connect

from agentao.gateway.limits import Limits
from tests.gateway.conftest import LiveGateway, scripted_spec
from tests.gateway.test_asking import ASKING
from tests.gateway.test_tasks import frames, start_task
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

pytestmark = pytest.mark.timeout(120)
WIDTHS = pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1280", "390"])


@pytest.fixture
def gateway(gateway_factory: Callable[..., LiveGateway]) -> LiveGateway:
    return gateway_factory(script=ASKING)


@pytest.fixture
def page(browser: Browser, gateway: LiveGateway, viewport: dict[str, int]) -> Iterator[Page]:  # noqa: F811
    phone = viewport == PHONE
    page = open_page(browser, gateway.url, viewport=viewport, is_mobile=phone, has_touch=phone)
    yield page
    page.context.close()


@WIDTHS
def test_the_agents_question_is_pinned_and_answered_in_the_page(
    page: Page, viewport: dict[str, int], tmp_path: Path
) -> None:
    send(page, "paint it")
    page.locator(".turn .question").wait_for()  # in the transcript, where it was asked
    pinned = page.locator("#asking .question")
    pinned.wait_for()
    assert pinned.locator(".ask-title").inner_text() == "The agent asks"
    assert pinned.locator(".question-text").inner_text() == "which colour?"
    box = pinned.bounding_box()  # in sight, on a phone too (not behind ☰)
    assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"]
    page.screenshot(path=str(tmp_path / f"web-agent-question-{viewport['width']}.png"))
    pinned.locator(".answer-box").fill("cobalt blue")
    pinned.locator("button.send-answer").click()
    turn = last_turn(page)
    assert turn.locator(".question .decision").inner_text() == "Answered: cobalt blue"
    assert page.locator("#asking").is_hidden()
    assert turn.get_attribute("data-state") != "error"
    assert "painted it" in turn.inner_text()


WINDOW = 3.0  # the test's deadline: short, and held off by the page's presence


@pytest.mark.parametrize("viewport", [DESKTOP], ids=["1280"])
def test_a_question_the_page_shows_outlives_its_deadline(
    browser: Browser,  # noqa: F811
    gateway_factory: Callable[..., LiveGateway],
    viewport: dict[str, int],
    tmp_path: Path,
) -> None:
    limits = Limits(permission_deadline_seconds=WINDOW)
    gw = gateway_factory(agents=(scripted_spec(tmp_path, ASKING),), limits=limits)
    page = open_page(browser, gw.url, viewport=viewport)
    send(page, "paint it")
    page.locator("#asking .question").wait_for()
    with gw.http() as http:
        (ask,) = http.get("/v1/questions").json()["data"]
    assert ask["window"] == WINDOW
    # Past the deadline it was asked with (and again): the page's presence moved it on.
    page.wait_for_function(f"() => Date.now() / 1000 > {ask['deadline'] + WINDOW}")
    with gw.http() as http:
        assert [a["requestId"] for a in http.get("/v1/questions").json()["data"]] == [
            ask["requestId"]
        ]
    page.locator("#asking .question .answer-box").fill("slowly typed")
    page.locator("#asking .question button.send-answer").click()
    decision = last_turn(page).locator(".question .decision")
    assert decision.inner_text() == "Answered: slowly typed"
    page.context.close()


@pytest.mark.parametrize("viewport", [PHONE], ids=["390"])
def test_another_sessions_question_waits_in_the_banner_and_is_answered_there(
    page: Page, gateway: LiveGateway
) -> None:
    """An API caller's task asks; the page, on no session, shows it in the banner."""
    started = start_task(gateway, "paint it")
    card = page.locator("#pending .question")
    card.wait_for()
    assert card.locator(".question-text").inner_text() == "which colour?"
    card.locator(".answer-box").fill("from the banner")
    card.locator("button.send-answer").click()
    with connect(gateway.ws_url(started["stream_url"])) as ws:
        seen = frames(ws)
    [verdict] = [f for f in seen if f["type"] == "question-response"]
    assert (verdict["answer"], verdict["by"]) == ("from the banner", "human")
    assert seen[-1]["type"] == "task-ended"
    page.locator("#pending").wait_for(state="hidden")
