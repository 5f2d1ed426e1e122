"""A Responses API object, built step by step, with the typed events that describe each step.

Theory of operation. The agent's turn is a sequence of reasoning runs (thoughts,
tool activity, plan) and text runs. Each run becomes one output item: a
`reasoning` item with one summary part, or an assistant `message` with one
`output_text` part. A run is *open* until the other kind starts or the turn
ends; opening and closing emit the `*.added` / `*.done` events OpenAI clients
expect, and every event carries the next `sequence_number`. The non-streaming
path runs the same builder and ignores the events, so both paths return the
same object.

With `x_acp`, each raw ACP update is also an output item of type
`x_acp_update` (added and done at once); clients that do not know the type
skip it.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass
from typing import Any

from agentao.client import TurnEnd
from agentao.gateway.mapping import TokenUsage, response_status
from agentao.gateway.turns import GatewayTurn, Step

Event = dict[str, Any]


def _id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


class ResponseBuilder:
    def __init__(self, model: str, echo: dict[str, Any], *, x_acp: bool = False) -> None:
        self.id = _id("resp")
        self.created_at = int(time.time())
        self.model = model
        self.echo = echo  # request fields a Response repeats: instructions, metadata, ...
        self.x_acp = x_acp
        self.status = "in_progress"
        self.output: list[dict[str, Any]] = []
        self.usage: TokenUsage | None = None
        self.error: dict[str, Any] | None = None
        self.incomplete: dict[str, Any] | None = None
        self._seq = 0
        self._open: dict[str, Any] | None = None  # the item of the run in progress
        self._open_index = -1
        self._open_text: list[str] = []

    # ---- the object -----------------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": self.status,
            "error": self.error,
            "incomplete_details": self.incomplete,
            "model": self.model,
            "output": [dict(item) for item in self.output],
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
            "text": {"format": {"type": "text"}},
            "truncation": "disabled",
            "temperature": None,
            "top_p": None,
            "max_output_tokens": None,
            "reasoning": {"effort": None, "summary": None},
            "usage": self.usage.responses() if self.usage else None,
            "user": None,
            **self.echo,
        }

    def _event(self, type_: str, **fields: Any) -> Event:
        self._seq += 1
        return {"type": type_, "sequence_number": self._seq, **fields}

    # ---- lifecycle --------------------------------------------------------------------------

    def start(self) -> list[Event]:
        return [
            self._event("response.created", response=self.snapshot()),
            self._event("response.in_progress", response=self.snapshot()),
        ]

    def feed(self, step: Step) -> list[Event]:
        events: list[Event] = []
        if step.delta.reasoning:
            events += self._append("reasoning", step.delta.reasoning)
        if step.delta.text:
            events += self._append("message", step.delta.text)
        if self.x_acp:
            events += self._raw_item(step.update.raw)
        return events

    def finish(self, end: TurnEnd, usage: TokenUsage) -> list[Event]:
        status, reason = response_status(end.stop_reason)
        events = self._close("completed" if status == "completed" else "incomplete")
        if end.stop_reason == "refusal":
            events += self._refusal()
        self.status, self.usage = status, usage
        if reason is not None:
            self.incomplete = {"reason": reason}
        kind = "response.completed" if status == "completed" else "response.incomplete"
        return [*events, self._event(kind, response=self.snapshot())]

    def pause(self, calls: list[Any], usage: TokenUsage) -> list[Event]:
        """The agent called the caller's tools: a `function_call` item each, and the
        response completes there (its turn waits for their `function_call_output`)."""
        events = self._close("completed")
        for call in calls:
            item = {
                "id": _id("fc"),
                "type": "function_call",
                "status": "completed",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
            }
            self.output.append(item)
            ids = {"item_id": item["id"], "output_index": len(self.output) - 1}
            added = {**item, "status": "in_progress", "arguments": ""}
            events += [
                self._event(
                    "response.output_item.added", output_index=ids["output_index"], item=added
                ),
                self._event("response.function_call_arguments.delta", delta=call.arguments, **ids),
                self._event(
                    "response.function_call_arguments.done",
                    name=call.name,
                    arguments=call.arguments,
                    **ids,
                ),
                self._event(
                    "response.output_item.done", output_index=ids["output_index"], item=dict(item)
                ),
            ]
        self.status, self.usage = "completed", usage
        return [*events, self._event("response.completed", response=self.snapshot())]

    def fail(self, message: str, code: str) -> list[Event]:
        events = self._close("incomplete")
        self.status = "failed"
        self.error = {"code": code, "message": message}
        return [*events, self._event("response.failed", response=self.snapshot())]

    # ---- runs ---------------------------------------------------------------------------------

    def _append(self, kind: str, text: str) -> list[Event]:
        events: list[Event] = []
        if self._open is None or self._open["type"] != kind:
            events += self._close("completed")
            events += self._open_item(kind)
        self._open_text.append(text)
        item_id, index = self._open["id"], self._open_index  # type: ignore[index]
        if kind == "reasoning":
            events.append(
                self._event(
                    "response.reasoning_summary_text.delta",
                    item_id=item_id,
                    output_index=index,
                    summary_index=0,
                    delta=text,
                )
            )
        else:
            events.append(
                self._event(
                    "response.output_text.delta",
                    item_id=item_id,
                    output_index=index,
                    content_index=0,
                    delta=text,
                    logprobs=[],
                )
            )
        return events

    def _open_item(self, kind: str) -> list[Event]:
        if kind == "reasoning":
            item: dict[str, Any] = {"id": _id("rs"), "type": "reasoning", "summary": []}
            part: dict[str, Any] = {"type": "summary_text", "text": ""}
        else:
            item = {
                "id": _id("msg"),
                "type": "message",
                "role": "assistant",
                "status": "in_progress",
                "content": [],
            }
            part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        self.output.append(item)
        index = len(self.output) - 1
        self._open, self._open_index, self._open_text = item, index, []
        added = "response.reasoning_summary_part.added"
        if kind == "message":
            added = "response.content_part.added"
        where = {"summary_index": 0} if kind == "reasoning" else {"content_index": 0}
        return [
            self._event("response.output_item.added", output_index=index, item=dict(item)),
            self._event(added, item_id=item["id"], output_index=index, part=part, **where),
        ]

    def _close(self, status: str) -> list[Event]:
        item = self._open
        if item is None:
            return []
        self._open = None
        text = "".join(self._open_text)
        index = self._open_index
        if item["type"] == "reasoning":
            part = {"type": "summary_text", "text": text}
            item["summary"] = [part]
            ids = {"item_id": item["id"], "output_index": index, "summary_index": 0}
            events = [
                self._event("response.reasoning_summary_text.done", text=text, **ids),
                self._event("response.reasoning_summary_part.done", part=part, **ids),
            ]
        else:
            part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
            item["content"], item["status"] = [part], status
            ids = {"item_id": item["id"], "output_index": index, "content_index": 0}
            events = [
                self._event("response.output_text.done", text=text, logprobs=[], **ids),
                self._event("response.content_part.done", part=part, **ids),
            ]
        events.append(self._event("response.output_item.done", output_index=index, item=dict(item)))
        return events

    def _refusal(self) -> list[Event]:
        part = {"type": "refusal", "refusal": "The agent refused to continue."}
        item = {
            "id": _id("msg"),
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [part],
        }
        self.output.append(item)
        index = len(self.output) - 1
        return [
            self._event("response.output_item.added", output_index=index, item=dict(item)),
            self._event("response.output_item.done", output_index=index, item=dict(item)),
        ]

    def _raw_item(self, raw: dict[str, Any]) -> list[Event]:
        item = {"id": _id("acp"), "type": "x_acp_update", "status": "completed", "update": raw}
        self.output.append(item)
        index = len(self.output) - 1
        return [
            self._event("response.output_item.added", output_index=index, item=item),
            self._event("response.output_item.done", output_index=index, item=item),
        ]


def failed_snapshot(body: dict[str, Any], code: str, message: str) -> dict[str, Any]:
    """A stored Response object that will never finish, as `failed`: the error says why,
    and an item still in progress is `incomplete` (what it holds is kept)."""
    output = [
        {**item, "status": "incomplete"} if item.get("status") == "in_progress" else item
        for item in body.get("output") or ()
        if isinstance(item, dict)
    ]
    return {
        **body,
        "status": "failed",
        "error": {"code": code, "message": message},
        "output": output,
    }


@dataclass(slots=True)
class LiveResponse:
    """A response still being produced: GET and cancel read it (`Gateway.live_responses`)."""

    builder: ResponseBuilder
    turn: GatewayTurn
    owner: str
    done: asyncio.Event


__all__ = ["LiveResponse", "ResponseBuilder", "failed_snapshot"]
