"""A long session against a model with a hard 12k-token window (the fake LLM refuses
anything longer, as OpenAI does): every turn reads a new 12 KB file. Without compaction
turn 4 fails and every later one too; with it every turn ends, the last request still
holds the last two turns, compaction is reported as the client advertised, and a new
process loads the compacted session and goes on under the window."""

from __future__ import annotations

import json
import random
import re

import pytest

from tests.e2e.agent_process import agent_env, running
from tests.fakes.fake_llm import FakeReply, FakeToolCall

pytestmark = pytest.mark.timeout(120)

WINDOW = 12_000
FILE_BYTES = 12 * 1024
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "theta",
    "kappa",
    "lambda",
    "sigma",
    "omega",
]


def file_text(n: int) -> str:
    rng = random.Random(n)
    words: list[str] = []
    size = 0
    while size < FILE_BYTES:
        word = rng.choice(WORDS) + str(rng.randint(0, 999))
        words.append(word)
        size += len(word) + 1
    lines = [" ".join(words[i : i + 12]) for i in range(0, len(words), 12)]
    return f"FILE {n} START\n" + "\n".join(lines)[: FILE_BYTES - 40] + f"\nFILE {n} END\n"


def is_summary_request(body: dict) -> bool:
    first = body["messages"][0]
    system = body.get("system") or (first["content"] if first["role"] == "system" else "")
    return "You are compacting" in str(system)


def responder(body: dict) -> FakeReply:
    """A model that reads the file each prompt names, then says so (in either API's shape:
    a tool result is an OpenAI `tool` message, or an Anthropic `tool_result` block)."""
    if is_summary_request(body):
        return FakeReply(["## Task\nThe user has me read files one by one. ", "All read."])
    last = body["messages"][-1]
    blocks = last["content"] if isinstance(last["content"], list) else []
    if last["role"] == "user" and not any(b.get("type") == "tool_result" for b in blocks):
        name = re.search(r"f\d+\.txt", str(last["content"])).group(0)
        return FakeReply(tool_calls=[FakeToolCall("read_file", {"file_path": name})])
    return FakeReply([f"Read it ({len(str(last['content']))} characters)."])


@pytest.fixture
def ws(tmp_path):
    path = tmp_path / "ws"
    path.mkdir()
    for n in range(1, 33):
        (path / f"f{n:02}.txt").write_text(file_text(n))
    return path


@pytest.fixture
def hard_window(fake_llm):
    fake_llm.window = WINDOW
    fake_llm.respond = responder
    return fake_llm


def user_texts(body: dict) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m["role"] == "user"]


def kinds(agent, sid) -> list[str]:
    return [u["sessionUpdate"] for u in agent.updates(sid)]


async def test_thirty_turns_under_a_hard_window_then_load_and_go_on(tmp_path, ws, hard_window):
    fake = hard_window
    env = agent_env(tmp_path / "home", **fake.env())
    caps = {"session": {"compaction": {}}}
    async with running(env, capabilities=caps) as agent:
        sid = await agent.new_session(ws)
        for n in range(1, 31):
            reply = await agent.prompt(sid, f"read f{n:02}.txt")
            assert reply.get("result", {}).get("stopReason") == "end_turn", (n, reply)
        updates = agent.updates(sid, every=True)
    assert fake.refused <= 3
    turns = [r.body for r in fake.requests if not is_summary_request(r.body)]
    last = turns[-1]
    assert fake.tokens(last) <= WINDOW
    texts = user_texts(last)
    assert "read f29.txt" in texts and "read f30.txt" in texts
    tool_results = [str(m["content"]) for m in last["messages"] if m["role"] == "tool"]
    assert "FILE 30 START" in tool_results[-1] and "FILE 30 END" in tool_results[-1]
    assert not any(t == "read f01.txt" for t in texts)  # summarized away
    compactions = [u for u in updates if u["sessionUpdate"] == "compaction_update"]
    assert {u["status"] for u in compactions} >= {"in_progress", "completed"}
    chunks = [u for u in updates if u["sessionUpdate"] == "compaction_summary_chunk"]
    assert chunks and "The user has me read files" in "".join(c["content"]["text"] for c in chunks)
    usage = [u for u in updates if u["sessionUpdate"] == "usage_update"]
    assert usage and all(0 < u["used"] <= u["size"] for u in usage)
    assert usage[-1]["size"] == WINDOW  # learned from the refusal
    assert not any(u["sessionUpdate"] == "notice" for u in updates)

    seen = len(fake.requests)
    async with running(env, capabilities=caps) as agent:
        await agent.call("session/load", {"sessionId": sid, "cwd": str(ws), "mcpServers": []})
        replayed = agent.updates(sid)
        for n in (31, 32):
            reply = await agent.prompt(sid, f"read f{n:02}.txt")
            assert reply["result"]["stopReason"] == "end_turn"
    assert sum(1 for u in replayed if u["sessionUpdate"] == "user_message_chunk") == 30
    assert any(u["sessionUpdate"] == "compaction_update" for u in replayed)
    after = [r.body for r in fake.requests[seen:]]
    assert after and all(fake.tokens(b) <= WINDOW for b in after)
    assert "read f30.txt" in user_texts(after[0])  # the compacted context, not turn 1's


@pytest.mark.parametrize(
    ("caps", "reported"),
    [({}, set()), ({"session": {"notices": {}}}, {"notice"})],
    ids=["nothing advertised", "notices"],
)
async def test_compaction_is_reported_only_as_advertised(tmp_path, ws, hard_window, caps, reported):
    env = agent_env(tmp_path / "home", AGENTAO_CONTEXT_TOKENS=str(WINDOW), **hard_window.env())
    async with running(env, capabilities=caps) as agent:
        sid = await agent.new_session(ws)
        for n in range(1, 7):
            reply = await agent.prompt(sid, f"read f{n:02}.txt")
            assert reply["result"]["stopReason"] == "end_turn"
        seen = set(kinds(agent, sid))
    assert hard_window.refused == 0  # the window was known: compaction came first
    gated = {"compaction_update", "compaction_summary_chunk", "notice"}
    assert seen & gated == reported
    assert "agent_thought_chunk" not in seen  # never as a thought either
    if reported:
        notices = [u for u in agent.updates(sid) if u["sessionUpdate"] == "notice"]
        assert notices[0]["title"] == "Context compacted" and "tokens" in notices[0]["description"]


async def test_window_from_the_providers_model_list(tmp_path, ws, hard_window):
    hard_window.advertise_window = True
    env = agent_env(tmp_path / "home", **hard_window.env())
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        for n in range(1, 6):
            assert (await agent.prompt(sid, f"read f{n:02}.txt"))["result"][
                "stopReason"
            ] == "end_turn"
        usage = [u for u in agent.updates(sid, every=True) if u["sessionUpdate"] == "usage_update"]
    assert hard_window.refused == 0
    assert usage[-1]["size"] == WINDOW


async def test_summary_request_is_what_compaction_sends(tmp_path, ws, hard_window):
    env = agent_env(tmp_path / "home", AGENTAO_CONTEXT_TOKENS=str(WINDOW), **hard_window.env())
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        for n in range(1, 6):
            await agent.prompt(sid, f"read f{n:02}.txt")
    summaries = [r.body for r in hard_window.requests if is_summary_request(r.body)]
    assert summaries, "no summary was asked for"
    body = summaries[0]
    assert "tools" not in body  # a summary, not a turn
    transcript = json.dumps(body["messages"][1])
    assert "read f01.txt" in transcript  # old turns are summarized...
    assert "characters shortened" in transcript  # ...with their tool outputs cut
    assert "read f05.txt" not in transcript  # the current turn stays out (verbatim)


async def test_an_anthropic_refusal_for_length_compacts_too(tmp_path, ws, hard_window):
    """The same session against the Anthropic Messages API: its refusal ("prompt is too
    long: N tokens > M maximum") teaches the window and the session goes on."""
    env = agent_env(tmp_path / "home", **hard_window.env("ANTHROPIC"))
    async with running(env) as agent:
        sid = await agent.new_session(ws)
        for n in range(1, 9):
            reply = await agent.prompt(sid, f"read f{n:02}.txt")
            assert reply.get("result", {}).get("stopReason") == "end_turn", (n, reply)
        usage = [u for u in agent.updates(sid, every=True) if u["sessionUpdate"] == "usage_update"]
    assert hard_window.refused == 1 and usage[-1]["size"] == WINDOW
    assert all(r.path == "/v1/messages" for r in hard_window.requests)
