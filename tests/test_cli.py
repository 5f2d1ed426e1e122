"""cli.py: `agentao --acp` takes its fast path only for the exact forms editors use."""

from __future__ import annotations

import pytest

from agentao.cli.main import _acp_only

ROWS = [
    (["--acp"], (True, None)),
    (["--acp", "--resume"], (True, "")),
    (["--acp", "--resume", "abc"], (True, "abc")),
    (["--acp", "--resume", "--help"], (False, None)),  # argparse says what that means
    (["--acp", "--version"], (False, None)),
    (["--acp", "--resume", "a", "b"], (False, None)),
    (["run", "--acp"], (False, None)),
    ([], (False, None)),
]


@pytest.mark.parametrize(("argv", "expected"), ROWS, ids=[" ".join(r[0]) or "none" for r in ROWS])
def test_acp_fast_path(argv: list[str], expected: tuple[bool, str | None]) -> None:
    assert _acp_only(argv) == expected


def test_run_help_lists_agentaos_modes_as_the_agent_has_them() -> None:
    from agentao.agent.permissions import MODES
    from agentao.cli.main import AGENTAO_MODES

    assert [mode for mode, _ in AGENTAO_MODES] == [m.id for m in MODES]
