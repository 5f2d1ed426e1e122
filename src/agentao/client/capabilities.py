"""What the client advertises in `initialize`, and therefore what it serves.

One source of truth: `advertised(policy)` is the `clientCapabilities` object
sent to the agent, and `serves(capabilities, method)` decides from that very
object whether a method the agent calls is answered at all. A method gated by
a capability the client did not advertise gets -32601 (method not found)
before anything runs, reads or writes: an agent must not get from us what we
never offered it (a remote agent that sends `terminal/create` anyway would
otherwise run a command on this machine).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentao.client.config import ClientPolicy

# wire method -> the path, in `clientCapabilities`, that must be `true` for it to be served
GATES: Mapping[str, tuple[str, ...]] = {
    "fs/read_text_file": ("fs", "readTextFile"),
    "fs/write_text_file": ("fs", "writeTextFile"),
    "terminal/create": ("terminal",),
    "terminal/output": ("terminal",),
    "terminal/wait_for_exit": ("terminal",),
    "terminal/kill": ("terminal",),
    "terminal/release": ("terminal",),
}


def advertised(policy: ClientPolicy, subagents: bool = False) -> dict[str, Any]:
    """The `clientCapabilities` for `initialize`, from the policy; `subagents`: the
    reader shows child sessions (`Client(subagents=True)`, client/children.py)."""
    advertised: dict[str, Any] = {
        "fs": {
            "readTextFile": policy.files in ("read", "read-write"),
            "writeTextFile": policy.files == "read-write",
        },
        "terminal": policy.terminal,
    }
    if subagents:
        advertised["subagents"] = {}
    return advertised


def serves(capabilities: Mapping[str, Any], method: str) -> bool:
    """Whether `method` may be answered under the advertised `capabilities`."""
    path = GATES.get(method)
    if path is None:
        return True  # not a capability-gated method
    node: Any = capabilities
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node is True


__all__ = ["GATES", "advertised", "serves"]
