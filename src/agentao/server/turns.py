"""`session/prompt`: one turn as a task, its events as updates, its end committed.

Theory of operation. The prompt handler starts the turn as its own task and
waits for it (`asyncio.wait`, so the handler can tell "the turn was
cancelled" from "this request was cancelled"). `session/cancel` cancels that
task (`LiveSession.cancel`): the CancelledError lands wherever the turn waits
-- the LLM stream (closed), a tool (killed), a question to the client
(`$/cancel_request` goes out) -- and `drive_turn` answers it with the closing
events and `TurnEnded("cancelled")`. Each event is written as a
`session/update` before the next is taken, so every update of the turn is on
the wire before the result. The turn's record is committed to the store
before the reply, so a turn the client saw end is never lost.

v1 does all of this inside the prompt request (`run_prompt`). v2 answers the prompt at
insertion, so server/v2.py uses the pieces: `claim`, `start_turn` (from here a cancel reaches
the turn), then `finish_turn` after the reply, whose end becomes the idle `state_update`.

A prompt arriving while a turn runs is refused (-32600, data.reason "busy"), unless it
asked to wait and the line has room: then it waits its turn (`prompt_queue.py`; a cancel
drops it, answered `stopReason: "cancelled"`); one arriving while a cancelled turn winds
down waits for it (`turn_state.py`).
What the turn runs (`Body`) is an ordinary model turn or a slash command
(`commands.py`); either way it is stored, then a `session_info_update` (title,
updatedAt) goes out, then the reply.

The prompt's content blocks (`prompt_message`): text; `resource_link` as a link;
`resource` (embedded context) as its URI and text; `image` when the session's model
takes images (else -32602 naming the model), sent to the provider in its format.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from agentao.agent.cancellation import task_end
from agentao.agent.events import TurnEnded
from agentao.agent.providers.errors import LlmError
from agentao.agent.providers.messages import ImagePart, UserMessage
from agentao.protocol import meta, schema
from agentao.protocol.decode import to_builtins
from agentao.protocol.errors import (
    AcpError,
    AuthRequired,
    InternalError,
    InvalidParams,
    InvalidRequest,
    SessionNotFound,
)
from agentao.server.live import LiveSession
from agentao.server.prompt_queue import keep_for_queue, release, wait_turn
from agentao.server.session_title import info_update

log = logging.getLogger("agentao.server")

Body = Callable[[], Awaitable[TurnEnded]]


async def run_prompt(live: LiveSession, body: Body, queue: int = 0) -> schema.PromptResponse:
    """Run one turn of `live` and answer the prompt (see the module docstring); `queue`:
    how many prompts may wait for a running turn before this one is "busy"."""
    if not await claim(live, queue):
        return schema.PromptResponse(stop_reason="cancelled")  # dropped while waiting
    try:
        ended = await run_claimed(live, body)
    finally:
        release(live)  # the next waiting prompt runs once this reply is written
    return schema.PromptResponse(stop_reason=ended.stop_reason, meta=usage_meta(ended))


async def run_claimed(live: LiveSession, body: Body) -> TurnEnded:
    """Run the turn of a session already `claim`ed: its end, or the LLM's failure as a
    JSON-RPC error (`llm_error`). v1 answers the prompt with it; v2, which answered the
    prompt at insertion, reports it as the idle `state_update` (server/v2.py)."""
    before = len(live.agent.turns)
    return await finish_turn(live, start_turn(live, body), before)


def start_turn(live: LiveSession, body: Body) -> asyncio.Task[TurnEnded]:
    """The claimed session's turn, started now: from here `session/cancel` reaches it."""
    task = asyncio.create_task(_turn(live, body), name=f"turn {live.id}")
    live.turn_task = task
    task.add_done_callback(partial(_unless_over, live))
    return task


async def finish_turn(live: LiveSession, task: asyncio.Task[TurnEnded], before: int) -> TurnEnded:
    """Wait for a started turn; its title update once stored (`before`: the turns then)."""
    try:
        await asyncio.wait([task])
    except asyncio.CancelledError:  # this request was cancelled ($/cancel_request)
        live.cancel()
        raise
    if len(live.agent.turns) > before:
        await live.send(session_info(live))
    try:
        return task_end(task)
    except LlmError as exc:
        raise llm_error(exc) from None


def session_info(live: LiveSession) -> Any:
    """The session's title (its first prompt) and last activity, as an update."""
    return info_update(live)  # a title the person chose, else the first prompt


async def claim(live: LiveSession, queue: int = 0) -> bool:
    """Move the session to `prompting`, waiting behind a turn that is being cancelled, or
    in line behind a running one when fewer than `queue` prompts wait there already.
    False: a cancel dropped this prompt from the line before it ran."""
    while not live.state.can("prompt"):
        verdict = live.state.verdict()
        if verdict == "gone":
            raise SessionNotFound(live.id)
        if verdict == "reject" and live.queue.waiting < queue:
            return await wait_turn(live)
        if verdict == "reject":
            raise InvalidRequest(
                "Invalid Request: a prompt is already running in this session; "
                "send session/cancel first",
                {"sessionId": live.id, "reason": "busy"},
            )
        await live.state.wait_idle()
    live.state.fire("prompt")
    return True


async def _turn(live: LiveSession, body: Body) -> TurnEnded:
    before = len(live.agent.turns)
    try:
        await live.wait_setup()  # cancelled here: nothing to record, `task_end` answers
        await live.prepare()
        return await body()
    finally:
        if len(live.agent.turns) > before:
            await _store(live)
        _over(live)


def _over(live: LiveSession) -> None:
    """The turn is over: the session goes idle (or is kept for the next waiting prompt)."""
    if not keep_for_queue(live) and live.state.can("finish"):
        live.state.fire("finish")
    live.turn_task = None


def _unless_over(live: LiveSession, task: asyncio.Task[TurnEnded]) -> None:
    """A turn cancelled before its first step (a `session/cancel` read with its prompt)
    never enters `_turn`, so its `finally` never runs: without this the session would stay
    "cancelling" for good, and every later prompt would wait for it."""
    if live.turn_task is task:
        _over(live)


async def _store(live: LiveSession) -> None:
    """Commit the finished turn even if a cancel lands meanwhile (the turn is over)."""
    task = asyncio.ensure_future(live.commit())
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
        except Exception:  # logged; the turn is over, a store failure must not undo it
            log.exception("session %s: the turn could not be stored", live.id)
            return


def llm_error(exc: LlmError) -> AcpError:
    """A failed LLM call as a JSON-RPC error; `data.reason` is the machine-readable cause."""
    data: dict[str, Any] = {"reason": exc.reason, "transient": exc.transient}
    message = f"LLM request failed ({exc.reason}): {exc}"
    if exc.reason in ("auth", "missing_credentials"):
        return AuthRequired(message, data)
    return InternalError(message, data)


def prompt_message(blocks: list[Any], model: str, images_ok: bool) -> tuple[UserMessage, str]:
    """The user's message from prompt content blocks, and the prompt as the history shows
    it (an image as a placeholder). -32602 for content the model cannot take."""
    parts: list[str] = []
    images: list[ImagePart] = []
    for block in blocks:
        if isinstance(block, schema.TextContentBlock):
            parts.append(block.text)
        elif isinstance(block, schema.ResourceLinkContentBlock):
            parts.append(f"[{block.name}]({block.uri})")
        elif isinstance(block, schema.ResourceContentBlock):
            parts.append(_resource(block.resource, images, images_ok))
        elif isinstance(block, schema.ImageContentBlock):
            if not images_ok:
                raise InvalidParams(
                    f"Invalid params: the model {model} does not take images "
                    "(switch to one that does, see configOptions)",
                    {"field": "prompt", "reason": "images_unsupported"},
                )
            images.append(ImagePart(block.mime_type, block.data, block.uri))
        else:
            kind = getattr(block, "type", None) or type(block).__name__.lower()
            raise InvalidParams(
                f"Invalid params: {kind} content is not supported (see promptCapabilities)",
                {"field": "prompt"},
            )
    text = "\n".join(p for p in parts if p)
    if not text and not images:
        raise InvalidParams("Invalid params: prompt has no text", {"field": "prompt"})
    shown = "\n".join([text, *(f"[image: {i.uri or i.mime_type}]" for i in images)]).strip()
    return UserMessage(text, tuple(images)), shown


def _resource(resource: Any, images: list[ImagePart], images_ok: bool) -> str:
    """An embedded resource: its text under its URI; an image blob as an image."""
    uri = resource.uri
    if isinstance(resource, schema.TextResourceContents):
        return f"```{uri}\n{resource.text}\n```"
    mime = resource.mime_type or "application/octet-stream"
    if images_ok and mime.startswith("image/"):
        images.append(ImagePart(mime, resource.blob, uri))
        return f"(image {uri} attached)"
    size = len(resource.blob) * 3 // 4
    return f"[embedded binary resource {uri} ({mime}, about {size} bytes): not shown]"


def usage_meta(ended: TurnEnded) -> dict[str, Any] | None:
    """Token usage goes under `_meta` (protocol/meta.py): the stable schema's
    PromptResponse has no `usage`, and no custom field may sit at its root."""
    u = ended.usage
    if u is None:
        return None
    usage = schema.Usage(
        total_tokens=u.total_tokens or u.input_tokens + u.output_tokens,
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        thought_tokens=u.thought_tokens,
        cached_read_tokens=u.cached_read_tokens,
    )
    return {meta.USAGE: to_builtins(usage)}


__all__ = [
    "Body",
    "claim",
    "finish_turn",
    "llm_error",
    "prompt_message",
    "run_claimed",
    "run_prompt",
    "session_info",
    "start_turn",
    "usage_meta",
]
