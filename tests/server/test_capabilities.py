"""The v2 `initialize` result advertises what the v2 surface serves, as v2's object markers
(server/capabilities.py `initialize_response_v2`, server/v2.py `AgentV2`)."""

from __future__ import annotations

import pytest

from agentao.server.capabilities import V2_BASELINE_SESSION_METHODS, initialize_response_v2
from agentao.server.v2 import AgentV2
from tests.schema_check import validate


async def _handler(self: object, params: object) -> dict[str, object]:
    return {}


def surface_serving(*methods: str) -> type:
    """A v2 surface that serves exactly `methods`."""
    handlers = {m.replace("/", "_"): _handler for m in methods}
    return type("ServingSurface", (), handlers)


@pytest.fixture(autouse=True)
def openai_gpt4o(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("LLM_PROVIDER", "OPENAI")
    monkeypatch.setenv("OPENAI_MODEL", "gpt-4o")  # takes images
    monkeypatch.setenv("AGENTAO_CONFIG_DIR", str(tmp_path))


def test_our_v2_surface_serves_the_baseline_and_delete_and_says_so() -> None:
    result = initialize_response_v2(AgentV2)
    session = result["capabilities"]["session"]
    assert session["delete"] == {} and session["prompt"]["embeddedContext"] == {}
    assert validate(2, "InitializeResponse", result) == []


def test_a_surface_serving_no_session_method_advertises_no_session() -> None:
    assert initialize_response_v2(surface_serving())["capabilities"] == {}


def test_the_baseline_served_advertises_session_with_object_markers() -> None:
    result = initialize_response_v2(surface_serving(*V2_BASELINE_SESSION_METHODS))
    session = result["capabilities"]["session"]
    assert session["prompt"] == {"image": {}, "embeddedContext": {}}
    assert session["mcp"] == {"stdio": {}, "http": {}}
    assert session["additionalDirectories"] == {}
    assert "delete" not in session  # not served
    assert validate(2, "InitializeResponse", result) == []


def test_delete_is_advertised_only_when_served() -> None:
    served = surface_serving(*V2_BASELINE_SESSION_METHODS, "session/delete")
    assert initialize_response_v2(served)["capabilities"]["session"]["delete"] == {}


def test_part_of_the_baseline_is_not_enough() -> None:
    partial = surface_serving(*V2_BASELINE_SESSION_METHODS[:-1])
    assert "session" not in initialize_response_v2(partial)["capabilities"]
