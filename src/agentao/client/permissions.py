"""`session/request_permission`: a policy picks one of the agent's options.

The handler seam is one async callable: it gets a `PermissionRequest` and
returns the chosen `optionId` (or a `PermissionAnswer`, the id with the reason
for it), or None for the `cancelled` outcome. The reason travels to the agent
in the answer's `_meta` (protocol/meta.py REASON): agentao's agent tells the
model exactly that, so a rejection no person made is never "rejected by user".
The client races the handler against the turn: when the turn is cancelled, a
pending request is answered `cancelled` whatever the handler is doing.

Rules of the default policy, in order:
* approving picks `allow_once`; rejecting picks `reject_once`;
* an `*_always` option is picked only with `ClientPolicy.remember`, so the
  client never hands out a standing permission on its own;
* when no acceptable option exists, the answer is `cancelled`.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import msgspec

from agentao.client.config import ClientPolicy

READ_KINDS = frozenset({"read", "search", "think"})


class PermissionOption(msgspec.Struct, frozen=True):
    option_id: str
    name: str
    kind: str  # allow_once | allow_always | reject_once | reject_always (or unknown)

    @property
    def allows(self) -> bool:
        return self.kind.startswith("allow")

    @property
    def always(self) -> bool:
        return self.kind.endswith("_always")


class PermissionRequest(msgspec.Struct, frozen=True):
    """What the agent asks; `tool_call` is merged with what was announced before."""

    session_id: str
    tool_call_id: str
    title: str
    kind: str  # the tool kind ("edit", "execute", ...; "other" when unknown)
    options: tuple[PermissionOption, ...]
    tool_call: dict[str, Any] = {}  # merged raw tool call
    # A child's question (client/children.py): the session at the top of its parents,
    # whose turn asks; None for a session's own question.
    root_session_id: str | None = None


class PermissionAnswer(msgspec.Struct, frozen=True):
    """An option id (None: `cancelled`) and, in words for a person and the model, why."""

    option_id: str | None
    reason: str = ""

    @classmethod
    def of(cls, answer: PermissionAnswer | str | None) -> PermissionAnswer:
        return answer if isinstance(answer, PermissionAnswer) else cls(answer)


PermissionHandler = Callable[[PermissionRequest], Awaitable["PermissionAnswer | str | None"]]


def choose(options: tuple[PermissionOption, ...], *, allow: bool, remember: bool) -> str | None:
    """The option id that approves (or rejects), or None (-> `cancelled`)."""
    wanted = ("allow_once", "allow_always") if allow else ("reject_once", "reject_always")
    for kind in wanted:
        if kind.endswith("_always") and not remember:
            continue
        for option in options:
            if option.kind == kind:
                return option.option_id
    return None


class PolicyPermissions:
    """The default handler: answer by `ClientPolicy.approve`."""

    def __init__(self, policy: ClientPolicy, ask: PermissionHandler | None = None) -> None:
        self.policy = policy
        self.ask = ask

    async def __call__(self, request: PermissionRequest) -> PermissionAnswer | str | None:
        approve = self.policy.approve
        if approve == "ask":
            if self.ask is not None:
                return await self.ask(request)
            if sys.stdin.isatty():
                return await ask_in_terminal(request, remember=self.policy.remember)
            return self._reject(request, "no one to ask: the client has no terminal")
        if approve == "all" or (approve == "reads" and request.kind in READ_KINDS):
            return PermissionAnswer(
                choose(request.options, allow=True, remember=self.policy.remember)
            )
        if approve == "reads":
            why = f"the client's policy approves only read and search tools, not {request.kind}"
        else:
            why = "the client's policy approves no tool calls"
        return self._reject(request, why)

    def _reject(self, request: PermissionRequest, reason: str) -> PermissionAnswer:
        return PermissionAnswer(
            choose(request.options, allow=False, remember=self.policy.remember), reason
        )


async def ask_in_terminal(
    request: PermissionRequest, *, remember: bool = False
) -> PermissionAnswer:
    """Ask the person at the terminal (rich prompt); `*_always` only with `remember`."""
    offered = [o for o in request.options if remember or not o.always]
    if not offered:
        return PermissionAnswer(None)
    chosen = await asyncio.to_thread(_prompt, request, offered)
    if chosen is None:
        return PermissionAnswer(None)
    option = next(o for o in offered if o.option_id == chosen)
    return PermissionAnswer(
        chosen, f"the person at the terminal chose {option.name or option.kind}"
    )


def _prompt(request: PermissionRequest, offered: list[PermissionOption]) -> str | None:
    from rich.console import Console
    from rich.markup import escape
    from rich.prompt import Prompt

    console = Console(stderr=True, highlight=False)
    # The agent's words are shown as text, never as markup that could hide part of them.
    title, kind = escape(request.title), escape(request.kind)
    console.print(f"\n[bold yellow]Permission[/] {title} [dim]({kind})[/]")
    raw_input = request.tool_call.get("rawInput")
    cwd = raw_input.get("cwd") if isinstance(raw_input, dict) else None
    if isinstance(cwd, str):  # where a command would run matters as much as what it is
        console.print(f"  [dim]in[/] {escape(cwd)}")
    for i, option in enumerate(offered, 1):
        console.print(f"  [bold]{i}[/] {escape(option.name)} [dim]{escape(option.kind)}[/]")
    choices = [str(i) for i in range(1, len(offered) + 1)]
    default = next((str(i) for i, o in enumerate(offered, 1) if not o.allows), choices[-1])
    try:
        answer = Prompt.ask("Choose", choices=choices, default=default, console=console)
    except (EOFError, KeyboardInterrupt):
        return None
    return offered[int(answer) - 1].option_id


def parse_options(raw: Any) -> tuple[PermissionOption, ...]:
    """The agent's options, skipping malformed ones (lenient, like the schema asks)."""
    out = []
    for item in raw if isinstance(raw, list) else ():
        if isinstance(item, dict) and isinstance(item.get("optionId"), str):
            kind = item.get("kind") if isinstance(item.get("kind"), str) else ""
            out.append(PermissionOption(item["optionId"], str(item.get("name", "")), kind))
    return tuple(out)


__all__ = [
    "READ_KINDS",
    "PermissionAnswer",
    "PermissionHandler",
    "PermissionOption",
    "PermissionRequest",
    "PolicyPermissions",
    "ask_in_terminal",
    "choose",
    "parse_options",
]
