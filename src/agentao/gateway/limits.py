"""The gateway's named limits (`[limits]` in its config file, see config.py), each with
its default, and their checks. Every limit the gateway applies is one of these settings."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentao.store.target import DEFAULT_CONNECT_SECONDS, DEFAULT_POOL_SIZE

MAX_TRANSCRIPT_MATCH_DEPTH = 500  # one query binds this many hashes; SQLite allows 32766


@dataclass(frozen=True, slots=True)
class Limits:
    """Named limits of the gateway, each with its default."""

    retry_after_seconds: int = 1  # Retry-After on a 409 for a busy session
    cancel_grace_seconds: float = 2.0  # a new request waits this long for a cancelling turn
    # `[agents.NAME] busy = "queue"`: a request waits this long in line for the running
    # turn of its conversation, then gets the 409 (turn_line.py)
    queue_wait_seconds: float = 300.0
    # Remote ACP over v2: a prompt sent while its session's turn runs is held (as v2 agents
    # hold it) until that turn ends, at most this many per conversation, each at most
    # queue_wait_seconds; one more is refused as busy (remote/held.py). 0: none is held.
    remote_prompt_queue_depth: int = 16
    permission_deadline_seconds: float = 60.0  # "ask": no human answer by then -> reject
    # ... unless someone watches it: each presence (`POST /v1/permissions/{id}/presence`,
    # which the web UI sends while it shows the question) moves the deadline to then plus
    # permission_deadline_seconds, but never past this long after the question was asked.
    permission_wait_max_seconds: float = 3600.0
    # The agent's `ask_user` question: an answer longer than this is refused (413), never
    # cut (asking.py); it waits permission_deadline_seconds, then the agent gets none.
    max_answer_chars: int = 8000
    ping_interval_seconds: float = 15.0  # task-stream keep-alive frames
    max_request_bytes: int = 16 * 1024 * 1024  # a larger HTTP body -> 413
    restart_backoff_seconds: float = 0.5  # first delay before restarting a crashed agent
    max_restart_backoff_seconds: float = 30.0
    start_timeout_seconds: float = 30.0  # spawn + initialize of one agent process
    conversations_listed: int = 100  # past sessions shown by the web UI
    title_chars: int = 60  # a conversation's title made from its prompt or the agent's
    max_title_chars: int = 200  # a title a person gives (longer: 400)
    max_search_chars: int = 200  # a search of the conversations (longer: 400)
    # An idle conversation's agent session is closed after this long, and reopened with
    # session/load by its next request (0: never). Agents without loadSession keep theirs.
    session_idle_seconds: float = 600.0
    # Chat Completions without a session key: a stored conversation must end at one of the
    # request's last this-many assistant messages (the longest match wins). Bounds the
    # lookup, one indexed query, whatever the transcript's length.
    transcript_match_depth: int = 32
    store_readers: int = 2  # read-only store connections, so lookups never queue behind writes
    store_pool_size: int = DEFAULT_POOL_SIZE  # PostgreSQL store: connections held at most
    store_connect_seconds: float = DEFAULT_CONNECT_SECONDS  # PostgreSQL: connect, or wait for one
    store_inline_commit_bytes: int = 64 * 1024  # SQLite: a batch this small commits on the loop
    max_session_key_length: int = 256  # X-Session-Id / x_session_id: visible ASCII only
    remote_connections_per_key: int = 32  # remote ACP connections one API key may hold open
    # Replicas on one PostgreSQL store: a live conversation belongs to one replica by a
    # lease it renews with its heartbeat; a replica silent for this long is dead (its
    # leases go to whoever asks next, its responses and tasks in flight are settled).
    lease_seconds: float = 15.0
    heartbeat_seconds: float = 3.0  # how often a replica renews its row and its leases
    # A remote ACP connection with no open stream and no message for this long is closed
    # (its sessions stay: `session/load` attaches again).
    remote_idle_seconds: float = 900.0
    # A remote client's update is stored once, in its conversation's log, and sent at once;
    # its row in the connection's numbering (a reference to the log) waits in memory for
    # the next message that is not one (the reply ending the prompt, a question), so a
    # turn's updates cost one transaction, not one each -- or until this many are waiting
    # (gateway/remote/clients.py). At least 1 (1: each written as it comes).
    remote_references_held: int = 256
    # Replicas: a request passed to the replica that holds its conversation fails (503,
    # come back later) when that replica does not accept the connection within this long.
    forward_connect_seconds: float = 5.0
    # A keyless gateway's web UI login (gateway/login.py): the link `serve` prints works
    # once and for this long; the session cookie it sets, for this long.
    login_link_seconds: float = 300.0
    login_session_seconds: float = 7 * 24 * 3600.0
    # The store writer (task frames, remote ACP messages), after a batch it could not
    # store: it waits this long before the next batch, doubled for each failure in a row
    # up to the max, then writes on (gateway/batches.py).
    writer_backoff_seconds: float = 0.05
    max_writer_backoff_seconds: float = 2.0
    # A conversation's log (every frame of its turns) is kept this many days after its last
    # update, then pruned (its row, tasks and responses stay); 0 keeps every log for good.
    log_retention_days: float = 0.0
    # The cyclic garbage collector scans the young objects once this many more were made
    # than freed (CPython's 700 is below what a streamed answer holds in flight: ~10% of the
    # CPU per update went to rescanning it; serving.py). At least 1 (0: collector off).
    gc_young_objects: int = 10_000
    tool_result_seconds: float = 240.0  # a caller's tool unanswered: turn cancelled (tool_bridge)
    # A caller's tool call waits this long at most for the agent's `tool_call` update that
    # announces it (which carries the text said before it: turns.py `_CallOrder`).
    announce_grace_seconds: float = 2.0
    max_caller_tools: int = 128  # the most tools one request may offer the agent


_LEAST = (  # (setting, its least value, why)
    ("log_retention_days", 0, " (0: keep every log)"),
    ("queue_wait_seconds", 0, ""),
    ("remote_prompt_queue_depth", 0, " (0: none is held)"),
    ("announce_grace_seconds", 0, ""),
    ("remote_references_held", 1, ""),
    ("max_caller_tools", 1, ""),
    ("tool_result_seconds", 1, ""),
    ("store_inline_commit_bytes", 0, " (0: never inline)"),
    ("gc_young_objects", 1, " (0 would turn the garbage collector off)"),
)


def parse_limits(table: dict[str, Any], where: str = "config") -> Limits:
    """`[limits]`, each setting checked; a bad one is a ValueError naming it."""
    known = frozenset(Limits.__dataclass_fields__)
    unknown = set(table) - known
    if unknown:
        raise ValueError(
            f"{where}: unknown [limits] settings {sorted(unknown)} (known: {', '.join(sorted(known))})"
        )
    limits = Limits(**table)
    if not 1 <= limits.transcript_match_depth <= MAX_TRANSCRIPT_MATCH_DEPTH:
        raise ValueError(
            f"{where}: [limits] transcript_match_depth must be 1..{MAX_TRANSCRIPT_MATCH_DEPTH}"
        )
    if not 0 <= limits.writer_backoff_seconds <= limits.max_writer_backoff_seconds:
        raise ValueError(
            f"{where}: [limits] writer_backoff_seconds must be at least 0 and at most "
            "max_writer_backoff_seconds"
        )
    for name, least, why in _LEAST:
        if getattr(limits, name) < least:
            raise ValueError(f"{where}: [limits] {name} must be at least {least}{why}")
    if not 0 < limits.heartbeat_seconds < limits.lease_seconds:
        raise ValueError(
            f"{where}: [limits] heartbeat_seconds must be above 0 and below lease_seconds "
            "(a lease must be renewed before it expires)"
        )
    return limits


__all__ = ["MAX_TRANSCRIPT_MATCH_DEPTH", "Limits", "parse_limits"]
