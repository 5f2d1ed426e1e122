"""`agentao --agent URL`: the interactive session with a remote agent (a keyless `agentao
serve`'s /acp on loopback; the client reads the local token from the state directory), in a
real pty."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.terminal import Terminal
from tests.gateway.conftest import ServedGateway, served_config

pytestmark = pytest.mark.timeout(90)


def test_a_remote_agent_by_url_in_the_interactive_session(tmp_path: Path) -> None:
    served = ServedGateway(tmp_path, served_config(tmp_path, [{"text": "remote hello"}]))
    term = Terminal(["--agent", f"{served.url}/acp"], tmp_path, {"AGENTAO_HOME": str(served.home)})
    try:
        term.wait_idle("session ")
        term.line("hi")
        screen = term.wait_turns(1)
        assert "remote hello" in screen.split("> hi")[-1]
        term.line("/quit")
        assert term.exit_status() == 0
    finally:
        term.save(tmp_path / "screen-remote.txt")
        term.close()
        served.stop()
