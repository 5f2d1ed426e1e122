"""The client's settings: frozen, named, each field with its documented default."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

Approve = Literal["none", "reads", "all", "ask"]
MissingFile = Literal["empty", "error"]
FileAccess = Literal["read-write", "read", "none"]


@dataclass(frozen=True, slots=True)
class AgentCommand:
    """How to start an agent: argv, extra environment, working directory.

    The agent runs in its own process group, so shutting it down also reaches
    the native children of wrapper scripts (npx, node shims, ...).
    """

    argv: tuple[str, ...]
    env: Mapping[str, str] = field(default_factory=dict)  # merged over os.environ
    cwd: str | None = None  # the agent process's cwd (not the session's)
    inherit_env: bool = True  # False: the agent sees only `env` (plus PATH)
    echo_stderr: bool = False  # also copy the agent's stderr to ours, line by line

    @classmethod
    def parse(cls, command: str, **kwargs: object) -> AgentCommand:
        """`AgentCommand.parse("qwen --acp")`: split like a POSIX shell would."""
        argv = tuple(shlex.split(command))
        if not argv:
            raise ValueError("empty agent command")
        return cls(argv, **kwargs)  # type: ignore[arg-type]

    @classmethod
    def ours(cls, *args: str, **kwargs: object) -> AgentCommand:
        """agentao's own agent, run by the current interpreter."""
        return cls((sys.executable, "-m", "agentao", "--acp", *args), **kwargs)  # type: ignore[arg-type]


@dataclass(frozen=True, slots=True)
class ClientPolicy:
    """What the client lets the agent do.

    approve:      answer to `session/request_permission`, and to every `terminal/create`
                  (asked as a tool call of kind `execute`, whether or not the agent asked
                  permission first). "none" rejects (reject_once, or `cancelled` when no
                  reject option is offered; a refused `terminal/create` gets an error and
                  nothing runs); "reads" approves tool kinds read/search/think (so never a
                  command); "all" approves everything; "ask" asks the user in the terminal
                  (rejects when there is no terminal).
    remember:     allow picking `allow_always` / `reject_always`. Off by default: the
                  client never grants an agent a standing permission on its own.
    missing_file: `fs/read_text_file` on a file that does not exist (inside the session's
                  directories): "empty" answers `content: ""`, which is what agents that
                  read-before-create expect (gemini-cli's write_file does exactly that,
                  see tests/data/real-agent-transcripts/gemini-cli.jsonl); "error"
                  answers -32002 "Resource not found" with `data: {"path": ...}`.
    files:        which `fs/*` methods to advertise and serve: "read-write" both,
                  "read" only `fs/read_text_file`, "none" neither (the agent uses its own
                  disk, if it has one).
    terminal:     advertise and serve `terminal/*` (commands run in the session's cwd).
                  What is not advertised is not served: the agent gets -32601.
    terminal_env: variables a terminal inherits although they look like credentials.
                  By default a terminal gets this process's environment minus anything
                  named like a key, token, secret or password (`agentao.credentials`):
                  what an agent runs must not print your provider key into its output,
                  its history or a `--record` file. Variables the agent itself sets in
                  `terminal/create` are passed as given.
    auth_method:  `authenticate` with this method id right after `initialize` (or when
                  `session/new` answers -32000 auth_required).
    """

    approve: Approve = "none"
    remember: bool = False
    missing_file: MissingFile = "empty"
    files: FileAccess = "read-write"
    terminal: bool = True
    terminal_env: tuple[str, ...] = ()
    auth_method: str | None = None


@dataclass(frozen=True, slots=True)
class Timeouts:
    """Named time limits, in seconds (None: wait as long as it takes)."""

    handshake: float = 60.0  # initialize (+ authenticate); npx-style agents install first
    request: float | None = 120.0  # session/new, load, list, set_mode ... (never a prompt)
    cancel_grace: float = 5.0  # after session/cancel, wait this long for the prompt's answer
    eof_grace: float = 2.0  # shutdown: after closing stdin, before SIGTERM to the group
    term_grace: float = 3.0  # after SIGTERM, before SIGKILL (agents and terminals)
    kill_grace: float = 2.0  # after SIGKILL, before giving up on the exit status


@dataclass(frozen=True, slots=True)
class Limits:
    """Named size limits."""

    stderr_tail_bytes: int = 64 * 1024  # ring buffer of the agent's stderr, for error reports
    max_backlog: int = 100_000  # updates kept for a session nobody is reading (oldest dropped)
    max_line_bytes: int = 64 * 1024 * 1024  # one NDJSON line from the agent
    max_read_bytes: int = 64 * 1024 * 1024  # one fs/read_text_file answer


__all__ = [
    "AgentCommand",
    "Approve",
    "ClientPolicy",
    "FileAccess",
    "Limits",
    "MissingFile",
    "Timeouts",
]
