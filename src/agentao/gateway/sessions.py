"""Conversations: one ACP session each, one turn at a time, bound to a live agent process.

Theory of operation. A `LiveConversation` is the in-memory side of a stored
`Conversation`: the client `Session` carrying it (if bound to a live process) and the
turn running on it. `Conversations.begin()` is the only way a turn starts:

1. *Reserve* the conversation. Busy -> 409 with Retry-After; but a turn that is only
   cancelling (its client went away) is waited for, up to `Limits.cancel_grace_seconds`,
   so a client that reconnects at once is served.
2. *Bind* an ACP session: reuse the live one; else `session/load` the stored `sessionId`
   on a live process (after a gateway or agent restart); else `session/new`. A stored
   session the agent cannot reload: `SessionLost` (Chat Completions starts afresh).
3. Open the task (store row + `TaskLog`), *drain* whatever the session received while
   no turn ran (late updates of a cancelled turn, a replayed history: none of it is the
   new answer's) and start the `GatewayTurn`, with no pause between the drain and the
   prompt (an update that came between would be the turn's and stale).

Outside turns. Whatever a bound agent session sends while no turn of it runs (a mode or
config change a remote client asked for, a title, its commands, late updates of a
cancelled turn) is appended to the conversation's log as a `session-update` frame of no
task (`TaskHub.note`), whoever watches: every reader reads it there. What the agent sent
before the session was bound (a `session/load`'s replay) is not: it is the history, not
news. An update is a turn's from its prompt's sending until its answer is read
(`Session.answering`).

Permission requests from every agent process come to `permission()`, which finds the
session's running turn and lets it decide under its policy.

Ownership. Only `Conversations` changes a conversation's record or live state (a rename,
a session started over, a new conversation's session parameters, our MCP servers): routes
ask it by name (tests/gateway/test_ownership.py reads the source for any other writer).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentao.client import AgentError, ClientError, PermissionRequest, Session, TurnEnd, Update
from agentao.client.permissions import PermissionAnswer, choose
from agentao.gateway.agent_protocol import logged_update
from agentao.gateway.config import Limits, Policy
from agentao.gateway.errors import (
    AgentUnavailable,
    Forbidden,
    NotFound,
    SessionBusy,
    SessionLost,
)
from agentao.gateway.keyed_locks import KeyedLocks
from agentao.gateway.permissions import PermissionDesk
from agentao.gateway.pool import AgentPool, SessionParams
from agentao.gateway.reasons import OUTSIDE_TURN
from agentao.gateway.replicas import Replica
from agentao.gateway.sampling import Knobs, apply_knobs
from agentao.gateway.tasklog import SESSION_UPDATE, TaskHub
from agentao.gateway.titles import short_title
from agentao.gateway.turns import GatewayTurn, TurnContext, TurnFailed
from agentao.store.gateway import GatewayStore
from agentao.store.gateway_records import Conversation, TaskRecord

log = logging.getLogger("agentao.gateway")
LEASE_LOST = (
    "another gateway replica took this conversation over while the turn ran (this one "
    "stopped renewing its lease); the turn's result was not kept"
)
LEASE_LOST_CODE = "lease_lost"  # the code of a turn whose result was not kept
LEASE_UNKNOWN = (
    "the store could not say whether this gateway replica still held the conversation "
    "when the turn ended; the turn's result was not kept"
)
CONVERSATION_PREFIX = "conv_"  # every conversation id starts so (and no other id does)


def keyed_conversation_id(owner: str, key: str) -> str:
    """The conversation a caller's own explicit key names (Chat Completions' session key):
    the same id on every replica, so the holder step finds it before any route runs."""
    return CONVERSATION_PREFIX + hashlib.sha256(f"{owner}\0{key}".encode()).hexdigest()[:32]


@dataclass(slots=True)
class LiveConversation:
    record: Conversation
    pool: AgentPool
    session: Session | None = None
    model: str | None = None
    turn: GatewayTurn | None = None
    reserved: bool = False
    last_used: float = 0.0  # loop time of the last turn's start or end
    # Remote connections watching it (changed only by `Conversations.attach`/`detach`).
    attached: set[str] = field(default_factory=set)
    lease: int | None = None  # our fencing token, while this replica holds it (replicas.py)
    # Where its log ends (the seq of its last stored frame), while nobody else can have
    # written it since we learnt it: created here, or held since our last task on it ended
    # with every frame stored, on a store no other replica writes. None: ask the store
    # (`TaskHub.open`). A note (what the agent sent outside a turn) moves the end: None
    # again (and the hub ignores an end known from before a note: `TaskHub.open`).
    log_seq: int | None = None
    unwatch: Callable[[], None] | None = None  # stops noting what its session sends
    tool_servers: tuple[Any, ...] = ()  # its session's MCP servers of ours (tool_bridge.py)

    @property
    def id(self) -> str:
        return self.record.id


# Sources whose turns an OpenAI consumer reads (`GatewayTurn.items`); others': the log.
CONSUMED_SOURCES = frozenset({"chat", "responses"})


@dataclass(frozen=True, slots=True)
class TurnRequest:
    """What to send and under which rules."""

    prompt: list[dict[str, Any]]
    title: str  # the prompt as text, for the task record and a new conversation's title
    owner: str
    policy: Policy
    model: str | None = None  # the agent's own model id, from `agent/model`
    source: str = "chat"
    inline_reasoning: bool = False
    # The conversation's transcript hash once this turn answered (Chat Completions binds a
    # later request by it); None: keep the one it has. The registry records it.
    transcript_after: Callable[[GatewayTurn], str | None] | None = None
    knobs: Knobs = ()  # sampling knobs, set where the agent offers them (sampling.py)


class Conversations:
    def __init__(
        self,
        store: GatewayStore,
        pools: dict[str, AgentPool],
        hub: TaskHub,
        desk: PermissionDesk,
        limits: Limits,
        replica: Replica,
        ceiling_of: Callable[[str], Policy],
    ) -> None:
        self.store = store
        # An owner's key ceiling: which of an agent's processes its sessions run on, and
        # what they may change there (pool.py, ceilings.py).
        self.ceiling_of = ceiling_of
        self.replica = replica
        self.pools = pools
        self.hub = hub
        self.desk = desk
        self.limits = limits
        self._live: dict[str, LiveConversation] = {}
        self._by_session: dict[str, LiveConversation] = {}
        self._running: dict[str, tuple[LiveConversation, GatewayTurn, TurnRequest]] = {}
        self._by_hash: dict[tuple[str, str, str], str] = {}  # (owner, agent, hash) -> conv id
        self._leasing = KeyedLocks()  # a conversation's lease: claimed, or released, at once
        self.charge: Callable[[LiveConversation, GatewayTurn], Awaitable[None]] | None = None

    # ---- finding and creating -----------------------------------------------------------

    def pool(self, agent: str) -> AgentPool:
        pool = self.pools.get(agent)
        if pool is None:
            raise NotFound(f"no agent named {agent!r}", param="model", code="model_not_found")
        return pool

    def live(self, conversation_id: str) -> LiveConversation | None:
        """A conversation already in memory (no store lookup)."""
        return self._live.get(conversation_id)

    async def get(self, conversation_id: str) -> LiveConversation | None:
        live = self._live.get(conversation_id)
        if live is not None:
            return live
        record = await self.store.get_conversation(conversation_id)
        if record is None or record.agent not in self.pools:
            return None
        return self._remember(record)

    async def create(
        self,
        owner: str,
        agent: str,
        source: str,
        conversation_id: str | None = None,
        *,
        session_id: str | None = None,
        session_params: dict[str, Any] | None = None,
    ) -> LiveConversation:
        """A new conversation; `session_id`: an agent session opened elsewhere that it
        carries from the start; `session_params`: where that session is opened (remote ACP)."""
        record = Conversation(
            id=conversation_id or CONVERSATION_PREFIX + uuid.uuid4().hex,
            owner=owner,
            agent=agent,
            source=source,
            session_id=session_id,
            session_params=session_params,
        )
        self.pool(agent)
        self.hub.save_conversation(record)  # written with (and before) its first task
        live = self._remember(record)
        live.log_seq = 0  # new: its log is empty (a replica's first claim forgets this)
        return live

    def _remember(self, record: Conversation) -> LiveConversation:
        live = self._live.get(record.id)
        if live is None:
            live = self._live[record.id] = LiveConversation(record, self.pool(record.agent))
            self._index(live, None)
        return live

    async def by_transcript(
        self, owner: str, agent: str, hashes: list[str]
    ) -> tuple[LiveConversation, str] | None:
        """The conversation whose last answer ends one of `hashes` (memory, then the store)."""
        for digest in hashes:
            conv_id = self._by_hash.get((owner, agent, digest))
            if conv_id is not None:
                return self._live[conv_id], digest
        found = await self.store.find_by_transcript(owner, agent, hashes)
        if found is None or found[0].agent not in self.pools:
            return None
        record, digest = found
        return self._live.get(record.id) or self._remember(record), digest

    def _index(self, conv: LiveConversation, old_hash: str | None) -> None:
        record = conv.record
        if old_hash is not None:
            self._by_hash.pop((record.owner, record.agent, old_hash), None)
        if record.transcript_hash is not None:
            self._by_hash[(record.owner, record.agent, record.transcript_hash)] = record.id

    def live_session(self, session_id: str) -> LiveConversation | None:
        """The conversation whose bound agent session has this id, if one is live here."""
        return self._by_session.get(session_id)

    async def by_session(self, agent: str, session_id: str) -> LiveConversation | None:
        """The conversation an agent's session id carries (memory, then the store)."""
        live = self._by_session.get(session_id)
        if live is not None and live.record.agent == agent:
            return live
        record = await self.store.conversation_by_session(agent, session_id)
        if record is None or record.agent not in self.pools:
            return None
        return self._live.get(record.id) or self._remember(record)

    async def bind(self, conv: LiveConversation) -> Session:
        """The conversation's agent session, opened (new or loaded) if need be; for a
        caller that holds no turn (a remote client opening or attaching to a session)."""
        await self._claim(conv)
        return await self._bind(conv)

    def running(self, task_id: str) -> GatewayTurn | None:
        entry = self._running.get(task_id)
        return entry[1] if entry is not None else None

    # ---- starting a turn ----------------------------------------------------------------

    async def begin(self, conv: LiveConversation, request: TurnRequest) -> GatewayTurn:
        await self._reserve(conv)
        conv.last_used = asyncio.get_running_loop().time()
        try:
            await self._claim(conv)
            session = await self._bind(conv)
            if request.model and request.model != conv.model:
                await self._set_model(conv, session, request.model)
            rules = conv.pool.spec.rules(self.ceiling_of(conv.record.owner))
            await apply_knobs(session, rules, request.knobs)
            return await self._start(conv, session, request)
        except BaseException:
            conv.reserved = False
            raise

    async def _claim(self, conv: LiveConversation) -> None:
        """Hold the conversation's lease (or be sent to the replica that does); if another
        replica held it since we last did, what we kept of it is stale: read it again."""
        async with self._leasing.hold(conv.id):
            held = conv.lease
            token, stale = await self.replica.claim(conv.id, held)
            conv.lease = token
            if self.replica.shared:  # others write logs too: where one ends is the store's
                conv.log_seq = None  # (a replica that settles a dead one's task, say)
            if not stale:
                return
            record = await self.store.get_conversation(conv.id)
            if record is None:
                raise NotFound(f"conversation {conv.id} was deleted", code="conversation_not_found")
            await self._close_session(conv)
            conv.record = record

    async def _reserve(self, conv: LiveConversation) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.limits.cancel_grace_seconds
        while conv.reserved:
            turn = conv.turn
            remaining = deadline - loop.time()
            opening = turn is None or turn.done.is_set()  # another request is opening a turn
            if remaining <= 0 or not (opening or turn.cancelling):
                raise SessionBusy(self.limits.retry_after_seconds)
            if opening:  # it may fail (a claim refused, a load that fails): see whether it does
                await asyncio.sleep(min(0.02, remaining))
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(turn.done.wait(), remaining)
        conv.reserved = True

    async def _bind(self, conv: LiveConversation) -> Session:
        if conv.session is not None and conv.pool.hosts(conv.session):
            return conv.session
        if conv.session is not None:  # its process died
            self._by_session.pop(conv.session.id, None)
            self._unwatch(conv)
            conv.session, conv.model = None, None
        stored = conv.record.session_id
        params = SessionParams.of(conv.record.session_params).with_servers(conv.tool_servers)
        try:
            if stored is not None:
                session = await self._load(conv, stored, params)
            else:
                session = await conv.pool.new_session(params, self.ceiling_of(conv.record.owner))
                conv.record.session_id = session.id
                self.hub.save_conversation(conv.record)
        except ClientError as exc:
            raise AgentUnavailable(f"agent {conv.record.agent!r}: {exc}") from None
        conv.session = session
        self._by_session[session.id] = conv
        self._watch(conv, session)
        return session

    def _watch(self, conv: LiveConversation, session: Session) -> None:
        """From now on, what `session` sends while no turn of it runs is noted in the
        conversation's log (see the module docstring)."""
        self._unwatch(conv)
        conv.unwatch = session.watch(functools.partial(self._outside_turn, conv, session))

    def _unwatch(self, conv: LiveConversation) -> None:
        unwatch, conv.unwatch = conv.unwatch, None
        if unwatch is not None:
            unwatch()

    def _outside_turn(self, conv: LiveConversation, session: Session, update: Update) -> None:
        """An update of a bound session (on the read path): a note unless a turn's."""
        if session.answering or conv.session is not session:
            return
        if (logged := logged_update(session, update)) is None:  # v1's shape: agent_protocol.py
            return
        # The end moved: where the note went when it was numbered from the end we knew
        # (no store read: a new conversation's first updates), else the hub or the store knows.
        self.note(conv, logged.wire)

    def note(self, conv: LiveConversation, update: Any) -> None:
        """A session update between turns (the agent's, or the gateway's own) to the log:
        JSON values, or the bytes the agent sent (`Update.wire`)."""
        frame = {"update": update}
        conv.log_seq = self.hub.note(conv.id, SESSION_UPDATE, frame, conv.log_seq)

    async def _load(
        self, conv: LiveConversation, session_id: str, params: SessionParams
    ) -> Session:
        if not conv.pool.info.load_session:
            raise SessionLost(
                f"the agent {conv.record.agent!r} cannot load sessions, and this conversation's "
                "session is gone (the gateway or the agent restarted)",
                code="session_lost",
            )
        try:
            ceiling = self.ceiling_of(conv.record.owner)
            return await conv.pool.load_session(session_id, params, ceiling)
        except AgentError as exc:
            raise SessionLost(
                f"the agent could not load this conversation's session: {exc.message}",
                code="session_lost",
            ) from None

    async def _set_model(self, conv: LiveConversation, session: Session, model: str) -> None:
        option = conv.pool.info.model_option or "model"
        ceiling = self.ceiling_of(conv.record.owner)
        if not conv.pool.spec.rules(ceiling).allows_option(option, model):
            raise Forbidden(
                f"this API key's ceiling {ceiling!r} may not switch the agent's model to "
                f"{model!r} (the agent's config names what each ceiling may set)",
                param="model",
                code="option_above_ceiling",
            )
        try:
            await session.set_config_option(option, model)
        except AgentError as exc:  # nothing ran yet: the request names a model it lacks
            raise NotFound(
                f"the agent refused the model {model!r}: {exc.message}",
                param="model",
                code="model_not_found",
            ) from None
        conv.model = model

    async def _start(
        self, conv: LiveConversation, session: Session, request: TurnRequest
    ) -> GatewayTurn:
        task_id = "task_" + uuid.uuid4().hex
        # The log writes the task's row before its first frame, off the critical path;
        # it numbers the frames on from the conversation's log (one read of the store).
        log_end, conv.log_seq = conv.log_seq, None  # known again once this task ends well
        task_log = await self.hub.open(
            TaskRecord(task_id, conv.id, "running", prompt=request.title[:2000]), log_end
        )
        if conv.record.title is None:
            conv.record.title = short_title(request.title, self.limits.title_chars) or None
            conv.record.title_by = "prompt"
            self.hub.save_conversation(conv.record)
        context = TurnContext(
            request.owner,
            request.policy,
            self.limits.permission_deadline_seconds,
            self.desk,
            request.inline_reasoning,
            consumed=request.source in CONSUMED_SOURCES,
            always_allow=conv.pool.spec.offers_always(),
            announce_grace_seconds=self.limits.announce_grace_seconds,
        )
        turn = GatewayTurn(session, request.prompt, task_log, context, self._ended)
        conv.turn = turn
        self._running[task_id] = (conv, turn, request)
        if stale := session.drain():  # in the log already (notes), or a replayed history
            log.debug("conversation %s: %d updates of no turn not replayed", conv.id, len(stale))
        turn.start(
            {
                "taskId": task_id,
                "conversationId": conv.id,
                "agent": conv.record.agent,
                "sessionId": session.id,
                "source": request.source,
                "prompt": request.prompt,
            }
        )
        return turn

    async def _ended(self, turn: GatewayTurn) -> None:
        conv, _turn, request = self._running.pop(turn.id)
        try:
            if self.charge is not None:  # its tokens and cost, against the owner's budgets.py
                await self.charge(conv, turn)
            await self._keep(conv, turn, request)
        finally:  # whatever failed above, the conversation is not left busy for good
            conv.last_used = asyncio.get_running_loop().time()
            if conv.turn is turn:
                conv.reserved = False

    async def _keep(self, conv: LiveConversation, turn: GatewayTurn, request: TurnRequest) -> None:
        """The turn's end in its conversation's record and log, if the lease is still ours."""
        ok = isinstance(turn.result, TurnEnd)
        lost = await self._lease_lost(conv)
        if lost is not None:  # another replica may own the record now: ours is not kept
            log.error("conversation %s: %s", conv.id, lost)
            ok, conv.lease = False, None
            turn.result = TurnFailed(lost, LEASE_LOST_CODE)  # its consumer is told so
        if ok:
            conv.record.turn_count += 1
            self._take_agent_title(conv, turn)
            answered = request.transcript_after
            digest = answered(turn) if answered is not None else None
            if digest is not None:
                old_hash, conv.record.transcript_hash = conv.record.transcript_hash, digest
                self._index(conv, old_hash)
            # Stored with the next batch of frames, not a transaction of its own.
            self.hub.save_conversation(conv.record)
        turn.emit_end()  # queued with the task's row: one batch stores both
        if ok:
            self.hub.end(turn.log, "ended")
        elif lost is not None:
            self.hub.end(turn.log, "error", lost)
        else:
            self.hub.end(turn.log, "error", getattr(turn.result, "message", None))
        await turn.log.closed.wait()
        if lost is None and turn.log.failure is None:  # every frame of it is stored
            conv.log_seq = turn.log.last_seq

    async def _lease_lost(self, conv: LiveConversation) -> str | None:
        """Why the turn's result may not be kept (None: this replica still holds it)."""
        try:
            held = await self.replica.holds(conv.id, conv.lease)
        except Exception:  # the store is away: nobody can say who owns the record now
            log.warning("conversation %s: could not check its lease", conv.id, exc_info=True)
            return LEASE_UNKNOWN
        return None if held else LEASE_LOST

    def set_session_params(self, conv: LiveConversation, params: dict[str, Any] | None) -> None:
        """What the conversation's session is made (and reopened) with from now on."""
        conv.record.session_params = params

    def start_over(self, conv: LiveConversation) -> None:
        """Forget the conversation's agent session (the agent could not load it): its next
        turn opens a new one, to which the caller sends the whole transcript."""
        if conv.session is not None:
            self._by_session.pop(conv.session.id, None)
        self._unwatch(conv)
        conv.record.session_id, conv.session, conv.model = None, None, None

    # ---- idle conversations ---------------------------------------------------------------

    async def sweep(self, idle_seconds: float) -> int:
        """Close the agent sessions of conversations idle that long, and forget them here;
        the next request reloads one (`session/load`). Agents that cannot load keep theirs."""
        now = asyncio.get_running_loop().time()
        idle = [
            c
            for c in self._live.values()
            if not c.reserved
            and not c.attached  # a remote client is watching: not idle
            and c.pool.info.load_session
            and now - c.last_used >= idle_seconds
        ]
        for conv in idle:
            await self._forget(conv)
        return len(idle)

    async def _forget(self, conv: LiveConversation) -> None:
        """Drop `conv` from memory and close its agent session (not from the store). A
        request for it meanwhile makes a new `LiveConversation`, whose claim waits until
        this one's lease is released (else the release would take the new one's lease)."""
        async with self._leasing.hold(conv.id):
            self._live.pop(conv.id, None)
            if conv.record.transcript_hash is not None:
                key = (conv.record.owner, conv.record.agent, conv.record.transcript_hash)
                self._by_hash.pop(key, None)
            await self._close_session(conv)
            if conv.lease is not None:
                conv.lease = None
                await self.replica.release(conv.id)

    async def _close_session(self, conv: LiveConversation) -> None:
        self._unwatch(conv)
        session, conv.session, conv.model = conv.session, None, None
        if session is not None:
            self._by_session.pop(session.id, None)
            conv.pool.release(session)
            with contextlib.suppress(ClientError):
                await session.close()

    async def serve_tools(self, conv: LiveConversation, servers: tuple[Any, ...]) -> None:
        """Our MCP servers for `conv`'s session (tool_bridge.py): an idle one bound without
        them is closed, and reopened with them (`session/load`) by the turn about to start."""
        changed, conv.tool_servers = servers != conv.tool_servers, servers
        if changed and conv.session is not None and not conv.reserved:
            await self._close_session(conv)

    # ---- a person's edits -----------------------------------------------------------------

    def _take_agent_title(self, conv: LiveConversation, turn: GatewayTurn) -> None:
        """The agent's title for its session (`session_info_update`), unless a person named it."""
        title = short_title(turn.session.view.title, self.limits.title_chars)
        if title and conv.record.title_by != "person":
            conv.record.title, conv.record.title_by = title, "agent"

    async def rename(self, conv: LiveConversation, title: str) -> None:
        """A person's title: stored now, and no later title of the agent's replaces it."""
        conv.record.title, conv.record.title_by = title, "person"
        await self.store.update_conversation(conv.record)

    async def delete(self, conv: LiveConversation) -> None:
        """Close its agent session and delete it with its tasks and responses (409 while a
        turn runs on it)."""
        if conv.reserved:
            raise SessionBusy(self.limits.retry_after_seconds)
        conv.reserved = True  # no turn starts on it from here on
        await self._forget(conv)
        await self.hub.flush()  # a queued write of its row must not bring it back
        await self.store.delete_conversation(conv.id)

    # ---- the agents' permission requests ------------------------------------------------

    async def permission(self, request: PermissionRequest) -> PermissionAnswer:
        conv = self._by_session.get(request.root_session_id or request.session_id)
        turn = conv.turn if conv is not None else None
        if turn is None or turn.done.is_set():
            log.info("permission request outside a turn (session %s): rejected", request.session_id)
            option = choose(request.options, allow=False, remember=False)
            return PermissionAnswer(option, OUTSIDE_TURN)
        return await turn.decide(request)

    # ---- remote watchers ------------------------------------------------------------------

    def attach(self, conv: LiveConversation, watcher: str) -> None:
        """A remote connection watches `conv` (an idle sweep leaves it open meanwhile)."""
        conv.attached.add(watcher)

    def detach(self, conv: LiveConversation, watcher: str) -> None:
        conv.attached.discard(watcher)


__all__ = [
    "CONVERSATION_PREFIX",
    "Conversations",
    "LiveConversation",
    "SessionLost",
    "TurnRequest",
    "keyed_conversation_id",
]
