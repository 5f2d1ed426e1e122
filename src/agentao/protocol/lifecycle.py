"""The connection lifecycle as data: which methods a side accepts in which state.

Everything that changes the lifecycle lives here. "A session method before
`initialize`" (-32002) is simply a method missing from the current state's
entry, not a check buried in a handler.
"""

from __future__ import annotations

from typing import Final, Literal

State = Literal["new", "initialized"]
ANY: Final = "*"

# state -> methods accepted in that state (on the side that *serves* them)
ACCEPTS: Final[dict[str, dict[State, frozenset[str]]]] = {
    "agent": {
        "new": frozenset({"initialize", "$/cancel_request"}),
        "initialized": frozenset({ANY}),
    },
    # A client serves fs/terminal/permission calls whenever the agent makes them.
    "client": {
        "new": frozenset({ANY}),
        "initialized": frozenset({ANY}),
    },
}

# (state, method whose successful reply we sent) -> next state
TRANSITIONS: Final[dict[tuple[State, str], State]] = {
    ("new", "initialize"): "initialized",
}


def accepts(role: str, state: State, method: str) -> bool:
    allowed = ACCEPTS[role][state]
    return ANY in allowed or method in allowed


def accepts_all(role: str, state: State) -> bool:
    return ANY in ACCEPTS[role][state]


def after_reply(state: State, method: str) -> State:
    return TRANSITIONS.get((state, method), state)


# Methods served before the next line is read: what follows them depends on their outcome.
BARRIERS: Final[frozenset[str]] = frozenset({"initialize"})


def is_barrier(method: str) -> bool:
    return method in BARRIERS
