"""The agent server's named settings from the environment (server/settings.py): the prompt
line's depth and the steering messages waiting for one step."""

from __future__ import annotations

import pytest

from agentao.server.settings import ServerSettings


def test_the_line_and_the_steering_bounds_have_defaults_and_take_whole_numbers() -> None:
    default = ServerSettings.from_env({})
    assert (default.prompt_queue_depth, default.steering_max_pending) == (16, 32)
    env = {"AGENTAO_PROMPT_QUEUE_DEPTH": "0", "AGENTAO_STEERING_MAX_PENDING": " 5 "}
    chosen = ServerSettings.from_env(env)
    assert (chosen.prompt_queue_depth, chosen.steering_max_pending) == (0, 5)


@pytest.mark.parametrize("raw", ["many", "1.5", "-1"])
def test_a_bad_bound_names_its_variable(raw: str) -> None:
    with pytest.raises(ValueError, match="AGENTAO_PROMPT_QUEUE_DEPTH"):
        ServerSettings.from_env({"AGENTAO_PROMPT_QUEUE_DEPTH": raw})
