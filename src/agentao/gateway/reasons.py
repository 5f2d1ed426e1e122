"""Why the gateway answered a permission request as it did, in words for a person and the model.

A reject nobody made must never read "rejected by user": the reason goes to the agent
with the answer (`PermissionAnswer.reason`, sent as `_meta["agentao.cn/reason"]`; our
agent puts it in the tool's result, "rejected: …"), onto the task stream's
`permission-response` frame, and so into the web UI. Who decided is one of `DECIDERS`;
a person answered through one of `CHANNELS`.
"""

from __future__ import annotations

from typing import Literal

from agentao.client.permissions import READ_KINDS, PermissionOption

Decider = Literal["policy", "human", "deadline", "cancelled"]
DECIDERS: tuple[Decider, ...] = ("policy", "human", "deadline", "cancelled")
Channel = Literal["web", "stream", "http", "acp"]
CHANNELS: dict[Channel, str] = {
    "web": "a person in the web UI",
    "stream": "a person watching the task stream",
    "http": "a person answering over HTTP",
    "acp": "a person at a remote ACP client",
}
OUTSIDE_TURN = "no turn of this conversation is running at the gateway, so nobody can answer"


def by_policy(policy: str, kind: str, allowed: bool) -> str:
    """A policy's verdict (`reject`, `reads`, `all`) on a tool call of `kind`."""
    which = f"the gateway's permission policy for this request ({policy!r})"
    if policy == "all":
        return f"{which} approves every tool call"
    if policy == "reads" and allowed:
        return f"{which} approves read and search tools"
    if policy == "reads":
        return f"{which} approves only read and search tools, not {kind or 'other'}"
    return f"{which} approves no tool calls"


def by_deadline(seconds: float) -> str:
    return f"nobody answered within {seconds:g} seconds (the gateway's permission deadline)"


def by_person(option: PermissionOption | None, channel: Channel) -> str:
    """A person's choice, named as the agent offered it ("Allow", "Reject")."""
    name = (option.name or option.kind) if option is not None else "no option"
    return f"{CHANNELS[channel]} chose {name}"


def policy_allows(policy: str, kind: str) -> bool:
    return policy == "all" or (policy == "reads" and kind in READ_KINDS)


__all__ = [
    "CHANNELS",
    "DECIDERS",
    "OUTSIDE_TURN",
    "Channel",
    "Decider",
    "by_deadline",
    "by_person",
    "by_policy",
    "policy_allows",
]
