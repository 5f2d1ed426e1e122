"""`_session/steering` from a remote ACP client (gateway/remote/steering.py): words for the
running turn reach our agent's turn; an idle session is never given a turn the gateway did
not begin (no task, no budget check), whatever the client asked for."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from acp import text_block

from tests.gateway.acp_peers import SdkPeer
from tests.gateway.conftest import LiveGateway
from tests.waiting import until

pytestmark = pytest.mark.timeout(60)


def steering(sid: str, words: str, **meta: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"sessionId": sid, "prompt": [{"type": "text", "text": words}]}
    if meta:
        params["_meta"] = {"steering": meta}
    return params


def user_texts(peer: SdkPeer, sid: str) -> list[str]:
    return [
        getattr(getattr(u, "content", None), "text", "")
        for s, u in peer.updates
        if s == sid and getattr(u, "session_update", "") == "user_message_chunk"
    ]


async def test_steering_through_the_gateway_never_starts_a_turn_there(
    gateway_factory: Any,
) -> None:
    gw: LiveGateway = gateway_factory()
    peer = await SdkPeer.connect(f"http://127.0.0.1:{gw.port}/acp")
    try:
        await peer.initialize()
        session = await peer.conn.new_session(cwd=gw.config.agents[0].cwd, mcp_servers=[])
        sid = session.session_id
        for asked in ({}, {"idleBehavior": "startNewTurn"}):
            idle = await peer.conn.ext_method("session/steering", steering(sid, "hi", **asked))
            assert idle == {"outcome": "promptRequired", "reason": "noRunningTurn"}
        turn = asyncio.ensure_future(
            peer.conn.prompt(session_id=sid, prompt=[text_block("slow please")])
        )
        await until(lambda: "tick" in peer.texts(sid), "the slow turn")
        running = await peer.conn.ext_method("session/steering", steering(sid, "and then?"))
        assert running == {"outcome": "injected"}
        assert (await asyncio.wait_for(turn, 30)).stop_reason == "end_turn"
        await until(lambda: "and then?" in user_texts(peer, sid), "the steering shown")
    finally:
        await peer.close()
