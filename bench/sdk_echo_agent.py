"""The official SDK's (`agent-client-protocol`) equivalent of examples/echo_agent.py.

Bench-only: the same behaviour ("chunks N" streams N chunks, else echo), so
bench/protocol.py and bench/client.py can compare the two cores side by side.
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
    update_agent_message_text,
)


class SdkEchoAgent:
    def on_connect(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=1)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=str(uuid.uuid4()))

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        words = text.split()
        if len(words) == 2 and words[0] == "chunks" and words[1].isdigit():
            pieces: Any = (str(i) for i in range(int(words[1])))
        else:
            pieces = (text,)
        for piece in pieces:
            await self.conn.session_update(
                session_id=session_id, update=update_agent_message_text(piece)
            )
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


if __name__ == "__main__":
    asyncio.run(run_agent(SdkEchoAgent()))
