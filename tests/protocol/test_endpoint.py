"""Two endpoints wired together in memory: requests, notifications, ordering, cancel, EOF."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from agentao.protocol import schema
from agentao.protocol.endpoint import Endpoint
from agentao.protocol.errors import ConnectionClosed, PeerError, RequestCancelled
from tests.protocol.memory import pipe


class Agent:
    def __init__(self) -> None:
        self.endpoint: Endpoint | None = None
        self.cancels: list[str] = []
        self.blocked = asyncio.Event()
        self.extensions = {"_test/raw": self._raw}

    async def initialize(self, params: schema.InitializeRequest) -> schema.InitializeResponse:
        return schema.InitializeResponse(protocol_version=1)

    async def session_prompt(self, params: schema.PromptRequest) -> schema.PromptResponse:
        text = params.prompt[0].text
        if text == "block":
            self.blocked.set()
            await asyncio.sleep(3600)
        if text == "ask":
            await self.endpoint.request(
                "_test/question", {"sessionId": params.session_id}, result_type=None
            )
        for i in range(int(text) if text.isdigit() else 0):
            chunk = schema.AgentMessageChunk(content=schema.TextContentBlock(text=str(i)))
            await self.endpoint.notify(
                "session/update",
                schema.SessionNotification(session_id=params.session_id, update=chunk),
            )
        return schema.PromptResponse(stop_reason="end_turn")

    async def session_cancel(self, params: schema.CancelNotification) -> None:
        self.cancels.append(params.session_id)

    async def _raw(self, params: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
        return {"seen": message["params"]}


class Client:
    def __init__(self, delay: float = 0.0) -> None:
        self.updates: list[tuple[str, str]] = []
        self.delay = delay
        self.extensions: dict[str, Any] = {}

    async def session_update(self, params: schema.SessionNotification) -> None:
        if self.delay:
            await asyncio.sleep(self.delay)
        self.updates.append((params.session_id, params.update.content.text))


async def connect(agent: Agent, client: Client) -> tuple[Endpoint, Endpoint, list[asyncio.Task]]:
    a_in, to_agent = pipe()
    c_in, to_client = pipe()
    agent_ep = Endpoint(agent, role="agent")
    client_ep = Endpoint(client, role="client")
    agent.endpoint = agent_ep
    tasks = [
        agent_ep.start(a_in, to_client),
        client_ep.start(c_in, to_agent),
    ]
    await client_ep.request("initialize", schema.InitializeRequest(protocol_version=1))
    return agent_ep, client_ep, tasks


def prompt(session_id: str, text: str) -> schema.PromptRequest:
    return schema.PromptRequest(session_id=session_id, prompt=[schema.TextContentBlock(text=text)])


async def test_updates_arrive_in_order_before_the_result() -> None:
    client = Client()
    _, client_ep, _ = await connect(Agent(), client)
    result = await client_ep.request("session/prompt", prompt("s", "500"))
    assert result.stop_reason == "end_turn"
    assert [t for _, t in client.updates] == [str(i) for i in range(500)]


async def test_slow_update_handler_still_sees_all_updates_before_result() -> None:
    client = Client(delay=0.001)
    _, client_ep, _ = await connect(Agent(), client)
    await client_ep.request("session/prompt", prompt("s", "50"))
    assert len(client.updates) == 50


class SyncClient:
    """A client whose update handler is synchronous, as `agentao.client`'s is."""

    def __init__(self) -> None:
        self.updates: list[str] = []
        self.tasks: set[asyncio.Task | None] = set()
        self.extensions: dict[str, Any] = {}

    def session_update(self, params: schema.SessionNotification) -> None:
        self.tasks.add(asyncio.current_task())
        self.updates.append(params.update.content.text)


async def test_a_synchronous_update_handler_runs_in_the_read_loop() -> None:
    # One call per update, in the reading task: no task made and scheduled for each one
    # (that was a third of a relayed chunk's cost), and still every update before the result.
    client = SyncClient()
    _, client_ep, tasks = await connect(Agent(), client)
    await client_ep.request("session/prompt", prompt("s", "300"))
    assert client.updates == [str(i) for i in range(300)]
    assert client.tasks == {tasks[1]}


async def test_sessions_interleave_but_each_stays_ordered() -> None:
    client = Client()
    _, client_ep, _ = await connect(Agent(), client)
    await asyncio.gather(
        *(client_ep.request("session/prompt", prompt(f"s{k}", "200")) for k in range(5))
    )
    for k in range(5):
        assert [t for s, t in client.updates if s == f"s{k}"] == [str(i) for i in range(200)]


async def test_cancel_request_answers_32800() -> None:
    agent = Agent()
    _, client_ep, _ = await connect(agent, Client())
    call = asyncio.create_task(client_ep.request("session/prompt", prompt("s", "block")))
    await agent.blocked.wait()
    request_id = next(iter(client_ep._futures))
    await client_ep.notify("$/cancel_request", {"requestId": request_id})
    with pytest.raises(PeerError) as info:
        await call
    assert info.value.code == RequestCancelled.code


async def test_cancelling_the_caller_sends_cancel_request() -> None:
    agent = Agent()
    agent_ep, client_ep, _ = await connect(agent, Client())
    call = asyncio.create_task(client_ep.request("session/prompt", prompt("s", "block")))
    await agent.blocked.wait()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    for _ in range(100):
        if not agent_ep._serving:
            break
        await asyncio.sleep(0.01)
    assert not agent_ep._serving


async def test_notification_from_client_reaches_agent() -> None:
    agent = Agent()
    _, client_ep, _ = await connect(agent, Client())
    await client_ep.notify("session/cancel", schema.CancelNotification(session_id="s9"))
    for _ in range(100):
        if agent.cancels:
            break
        await asyncio.sleep(0.01)
    assert agent.cancels == ["s9"]


async def test_eof_fails_pending_requests_at_once() -> None:
    c_in, to_client = pipe()
    _, to_agent = pipe()
    client_ep = Endpoint(Client(), role="client")
    run = client_ep.start(c_in, to_agent)
    call = asyncio.create_task(client_ep.request("initialize", {"protocolVersion": 1}))
    await asyncio.sleep(0.01)
    to_client.close()  # the agent died
    with pytest.raises(ConnectionClosed):
        await asyncio.wait_for(call, 1)
    await asyncio.wait_for(run, 1)
    with pytest.raises(ConnectionClosed):
        await client_ep.request("initialize", {"protocolVersion": 1})


async def test_peer_error_keeps_code_message_and_data() -> None:
    _, client_ep, _ = await connect(Agent(), Client())
    with pytest.raises(PeerError) as info:
        await client_ep.request("nope/nothing", {})
    assert info.value.code == -32601
    assert info.value.data == {"method": "nope/nothing"}


async def test_extension_sees_raw_message_with_unknown_fields() -> None:
    _, client_ep, _ = await connect(Agent(), Client())
    result = await client_ep.request("_test/raw", {"x": 1, "_meta": {"k": "v"}}, result_type=None)
    assert result == {"seen": {"x": 1, "_meta": {"k": "v"}}}


async def test_agent_to_client_request_and_unknown_client_method() -> None:
    agent = Agent()
    _, client_ep, _ = await connect(agent, Client())
    # The client has no handler for _test/question: the agent's request fails with -32601,
    # which the agent handler does not catch, so the prompt fails with -32603.
    with pytest.raises(PeerError) as info:
        await client_ep.request("session/prompt", prompt("s", "ask"))
    assert info.value.code == -32603


async def test_a_request_cancelled_before_it_first_ran_is_still_answered() -> None:
    """Request and `$/cancel_request` read in one go: the handler's task is cancelled before
    its first step, so the -32800 cannot come from inside it."""
    a_in, _ = pipe()
    replies, to_client = pipe()
    agent_ep = Endpoint(Agent(), role="agent")
    agent_ep.start(a_in, to_client)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    a_in.feed_data(json.dumps(init).encode() + b"\n")
    assert json.loads(await replies.readline())["id"] == 1
    params = {"sessionId": "s", "prompt": [{"type": "text", "text": "block"}]}
    call = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": params}
    cancel = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 2}}
    a_in.feed_data(b"".join(json.dumps(m).encode() + b"\n" for m in (call, cancel)))
    reply = json.loads(await asyncio.wait_for(replies.readline(), 10))
    assert reply["id"] == 2 and reply["error"]["code"] == RequestCancelled.code
