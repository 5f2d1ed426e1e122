"""Every request gets exactly one reply with its own id, over real pipes.

Valid JSON the fast decoder refuses (a lone surrogate escape, a number out of
range) is -32602 naming the field; a line over max_line_bytes is -32600 with
the id read from its ends (tests/protocol/test_framing.py shows the line is
never held whole).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.agent_process import running, scripted_env

pytestmark = pytest.mark.timeout(120)
MAX_LINE_BYTES = 64 * 1024 * 1024  # the agent's default
PROMPT = (
    '{"jsonrpc":"2.0","id":%s,"method":"session/prompt",'
    '"params":{"sessionId":"%s","prompt":[{"type":"text","text":%s}]}}\n'
)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ('"\\ud800"', "lone surrogate"),
        ('"ok \\udfff then"', "lone surrogate"),
        ("1e400", "number out of range"),
        ("9" * 5000, "number out of range"),
    ],
)
async def test_valid_json_our_decoder_refuses_is_answered_with_its_id(tmp_path, ws, text, reason):
    env = scripted_env(tmp_path, [{"text": "still here"}])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        await agent.send((PROMPT % ('"fuzz-1"', sid, text)).encode())
        reply = await agent.wait_for(lambda m: m.get("id") == "fuzz-1")
        assert reply["error"]["code"] == -32602
        assert reply["error"]["data"] == {"field": "prompt[0].text", "reason": reason}
        assert (await agent.prompt(sid, "hi"))["result"]["stopReason"] == "end_turn"


async def test_a_100_mib_prompt_over_the_cap_is_answered_with_its_id(tmp_path, ws):
    env = scripted_env(tmp_path, [{"text": "still here"}])
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        line = (PROMPT % ('"big"', sid, '"%s"' % ("x" * (100 * 1024 * 1024)))).encode()
        await agent.send(line)
        reply = await agent.wait_for(lambda m: m.get("id") == "big", timeout=90)
        assert reply["error"]["code"] == -32600
        assert "max_line_bytes" in reply["error"]["message"]
        size = len(line) - 1  # without the newline
        assert reply["error"]["data"] == {"lineBytes": size, "maxLineBytes": MAX_LINE_BYTES}
        assert (await agent.prompt(sid, "hi"))["result"]["stopReason"] == "end_turn"
