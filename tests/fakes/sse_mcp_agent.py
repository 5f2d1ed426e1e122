"""A third-party agent (the official ACP SDK's) that takes MCP servers over SSE only.

Run as a script on stdio, for the gateway to serve. It advertises `mcpCapabilities.sse`
and not `http`; "weather CITY" connects to the session's SSE MCP servers (the official
`mcp` SDK's client, with the headers it was given), announces a `tool_call` (with its
`rawInput`), calls `get_weather` with `{"city": CITY}` and says what it got back; anything
else is echoed.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from acp import (
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    run_agent,
    start_tool_call,
    update_agent_message_text,
)
from acp.schema import AgentCapabilities, McpCapabilities

try:
    from tests.fakes.sdk_agent import SdkAgent
except ImportError:  # run as a script: its own directory is on the path
    from sdk_agent import SdkAgent  # type: ignore[no-redef]


class SseMcpAgent(SdkAgent):
    def __init__(self, conn: Any) -> None:
        super().__init__(conn)
        self.servers: dict[str, list[Any]] = {}

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        caps = AgentCapabilities(mcp_capabilities=McpCapabilities(sse=True, http=False))
        return InitializeResponse(protocol_version=1, agent_capabilities=caps)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = str(uuid.uuid4())
        self.servers[session_id] = list(kwargs.get("mcp_servers") or ())
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        words = text.split()
        if len(words) == 2 and words[0] == "weather":
            said = await self._weather(session_id, words[1])
        else:
            said = text
        update = update_agent_message_text(said)
        await self.conn.session_update(session_id=session_id, update=update)
        return PromptResponse(stop_reason="end_turn")

    async def _weather(self, session_id: str, city: str) -> str:
        from mcp import Client
        from mcp.client.sse import sse_client

        (server,) = self.servers[session_id]
        headers = {h.name: h.value for h in server.headers}
        arguments = {"city": city}
        async with Client(sse_client(server.url, headers=headers)) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            call = start_tool_call("w1", "get_weather", kind="other", raw_input=arguments)
            await self.conn.session_update(session_id=session_id, update=call)
            result = await client.call_tool("get_weather", arguments)
        got = "".join(getattr(block, "text", "") for block in result.content)
        return f"tools {names}; weather: {got}"


if __name__ == "__main__":
    asyncio.run(run_agent(SseMcpAgent))
