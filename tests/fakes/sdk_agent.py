"""An agent written with the official ACP SDK: a third-party agent for our tests.

Served by the SDK's own HTTP/WebSocket adapter on 127.0.0.1 (`SdkServer`), for our
client to talk to remotely; or run as a script, on stdio (`python sdk_agent.py`), for
the gateway to serve and for the benches (the official SDK's side of each comparison).

"chunks N" streams N message chunks "0".."N-1"; "ask" requests a permission and says
what it got; "read PATH" reads PATH through its client (`fs/read_text_file`) and says
what it read; anything else is echoed.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import uuid
from typing import Any

from acp import (
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    update_agent_message_text,
)
from acp.schema import PermissionOption, ToolCallUpdate


class SdkAgent:
    def __init__(self, conn: Any) -> None:
        self.conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(protocol_version=1)

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        return NewSessionResponse(session_id=str(uuid.uuid4()))

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = "".join(getattr(block, "text", "") for block in prompt)
        words = text.split()
        if words[:1] == ["ask"]:
            pieces: Any = [await self._ask(session_id)]
        elif len(words) == 2 and words[0] == "read":
            pieces = [await self._read(session_id, words[1])]
        elif len(words) == 2 and words[0] == "chunks" and words[1].isdigit():
            pieces = (str(i) for i in range(int(words[1])))
        else:
            pieces = (text,)
        for piece in pieces:
            await self.conn.session_update(
                session_id=session_id, update=update_agent_message_text(piece)
            )
        return PromptResponse(stop_reason="end_turn")

    async def _ask(self, session_id: str) -> str:
        options = [
            PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
            PermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ]
        call = ToolCallUpdate(
            tool_call_id="t1", title="Touch a file", kind="edit", status="pending"
        )
        answer = await self.conn.request_permission(
            options=options, session_id=session_id, tool_call=call
        )
        return f"permission: {getattr(answer.outcome, 'option_id', 'cancelled')}"

    async def _read(self, session_id: str, path: str) -> str:
        try:
            answer = await self.conn.read_text_file(session_id=session_id, path=path)
        except RequestError as exc:
            return f"read failed: {exc}"
        return f"read: {answer.content}"

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


class SdkServer:
    """The SDK's ASGI app under uvicorn in a thread, on a free loopback port."""

    def __init__(self) -> None:
        # Imported here: run as a stdio agent (the benches time its start), it needs neither.
        import uvicorn
        from acp.http.asgi import create_asgi_app

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        # A stream a test left open must not hold the shutdown (uvicorn waits for it).
        config = uvicorn.Config(
            create_asgi_app(SdkAgent),
            log_level="warning",
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/acp"

    def __enter__(self) -> SdkServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline:
                raise RuntimeError("the SDK's server did not start")
            time.sleep(0.005)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=5)
        self.sock.close()


if __name__ == "__main__":
    asyncio.run(run_agent(SdkAgent))
