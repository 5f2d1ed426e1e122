"""A minimal ACP agent on agentao's protocol core: it echoes, or streams N chunks.

    python examples/echo_agent.py

`session/prompt` with the text "chunks N" streams N `agent_message_chunk`s
("0", "1", ...) and ends the turn; any other text is echoed back once. Used by
the protocol tests (a real subprocess over real pipes) and by `bench/`.
"""

from __future__ import annotations

import asyncio
import sys
import uuid

from agentao.protocol import schema
from agentao.protocol.endpoint import Endpoint, Limits
from agentao.protocol.errors import SessionNotFound
from agentao.protocol.stdio import open_stdio


class EchoAgent:
    def __init__(self) -> None:
        self.endpoint: Endpoint | None = None
        self.sessions: set[str] = set()

    async def initialize(self, params: schema.InitializeRequest) -> schema.InitializeResponse:
        return schema.InitializeResponse(
            protocol_version=1,
            agent_info=schema.Implementation(name="echo", version="1"),
        )

    async def session_new(self, params: schema.NewSessionRequest) -> schema.NewSessionResponse:
        session_id = str(uuid.uuid4())
        self.sessions.add(session_id)
        return schema.NewSessionResponse(session_id=session_id)

    async def session_prompt(self, params: schema.PromptRequest) -> schema.PromptResponse:
        if params.session_id not in self.sessions:
            raise SessionNotFound(params.session_id)
        text = "".join(getattr(block, "text", "") for block in params.prompt)
        words = text.split()
        if len(words) == 2 and words[0] == "chunks" and words[1].isdigit():
            pieces = (str(i) for i in range(int(words[1])))
        else:
            pieces = iter((text,))
        for piece in pieces:
            update = schema.AgentMessageChunk(content=schema.TextContentBlock(text=piece))
            await self.endpoint.notify(
                "session/update",
                schema.SessionNotification(session_id=params.session_id, update=update),
            )
        return schema.PromptResponse(stop_reason="end_turn")

    async def session_cancel(self, params: schema.CancelNotification) -> None:
        return None


async def main(argv: list[str]) -> None:
    limits = Limits()
    if "--max-line-bytes" in argv:
        limits = Limits(max_line_bytes=int(argv[argv.index("--max-line-bytes") + 1]))
    reader, writer = await open_stdio()
    agent = EchoAgent()
    agent.endpoint = Endpoint(agent, role="agent", limits=limits)
    await agent.endpoint.run(reader, writer)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
    sys.exit(0)
