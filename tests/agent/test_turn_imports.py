"""Optional means optional: the turn loop and providers load no LLM or MCP SDK."""

from __future__ import annotations

import subprocess
import sys

import agentao.agent.turn as turn


def test_turn_loop_imports_no_sdk() -> None:
    code = (
        "import sys, agentao.agent.turn, agentao.agent.providers, agentao.agent.session, "
        "agentao.agent.tools.todo, agentao.agent.tools.ask_user\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'openai', 'anthropic', 'mcp', "
        "'httpx', 'httpx2', 'agentao.protocol'}))\n"
        "print([m for m in sys.modules if m.startswith('agentao.protocol')])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:2] == ["[]", "[]"]


def test_public_names() -> None:
    assert turn.__all__ == ["compact_now", "drive_turn", "run_turn"]
