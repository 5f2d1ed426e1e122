"""The JSON-RPC 2.0 connection, free of I/O (sans-IO), used by both sides.

Theory of operation. Lines go in through `receive(line)` and come out as one
typed event each (or None for a line that needs no action):

    Request       a call we must answer (params decoded to the schema type)
    Notification  a one-way message (params decoded likewise)
    Response      the answer to one of *our* requests (result decoded, or a PeerError)
    Reject        input we refuse; `reply` holds the error line to write back

Outgoing messages are built by `request()`, `notify()`, `reply()` and
`reply_error()`, which return the bytes to write. The caller owns the pipe,
the tasks and the timing (see `endpoint.py`); everything here is plain data in,
data out, so it is tested line by line as a table (tests/protocol/conformance).

Validation order for a line: framing (size) -> UTF-8/JSON -> envelope shape ->
method known to this side -> lifecycle state -> params against the schema.
Each failing step has its own code; see `errors.py`.

Versions. A connection starts version-agnostic (`version` None, v1's table, where only
`initialize` is served before the handshake). An agent-side connection built to speak more
than v1 (`speaks=(1, 2)`) settles the version on `initialize` (`versions.py`: the requested
`protocolVersion` read strictly first, then the highest version both speak, or -32022), and
decodes that `initialize` and everything after it with that version's method table: a method
the version does not have (v2's `session/load`) is -32601. One that speaks only v1 (the
default) reads `initialize` exactly as before versions existed. A client side settles its
version from the agent's answer with `use_version`.

Every request gets exactly one reply with its own id. When the fast decoder
refuses a line, or the line is too big to hold, `salvage.py` recovers what it
can (the id, the damaged field) and the line goes through the same steps: a
lone surrogate or an out-of-range number in params is -32602 naming the field,
an oversize request is -32600 with its id. Only a line that is not JSON at all
gets -32700 with `id: null`. A refused *response* fails our pending request
instead of leaving it waiting forever.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from agentao.protocol import lifecycle
from agentao.protocol.errors import (
    AcpError,
    InvalidParams,
    InvalidRequest,
    LineTooLong,
    MethodNotFound,
    NotInitialized,
    ParseError,
    PeerError,
    UnsupportedVersion,
)
from agentao.protocol.framing import Oversize

if TYPE_CHECKING:
    from agentao.protocol import salvage


class _Log:
    """The protocol logger, with `logging` imported at the first message: nothing on the
    way to answering `initialize` logs, and the import is a cold-start cost."""

    def __getattr__(self, name: str) -> Any:
        import logging

        return getattr(logging.getLogger("agentao.protocol"), name)


log = _Log()

Role = Literal["agent", "client"]
RequestId = int | str | None

_decode_json = msgspec.json.Decoder().decode
_encode = msgspec.json.Encoder().encode
_UNSET = msgspec.UNSET

# The streamed method (one per update), read with no dicts (`_receive_passed`): its params
# typed, and its `update` kept as the bytes received, in the message in the object's place.
_PASSED_METHOD = "session/update"
_PASSED_MEMBER = "update"
_PASSED_NEEDLE = b'"session/update"'
_DICT_PATH = object()  # `_receive_passed`: this line is read by the dict path


# The events are msgspec Structs, not frozen dataclasses: one is made per line received
# (per streamed update), and a frozen dataclass's __init__ costs ten times as much.


class Request(msgspec.Struct, frozen=True):
    id: RequestId
    method: str
    params: Any  # a schema Struct for known methods, else the raw dict (or None)
    message: dict[str, Any]


class Notification(msgspec.Struct, frozen=True, gc=False):
    # gc=False (untracked by the cycle collector, which then scans fewer objects): it holds
    # the decoded params and the message as read, which never refer back to it.
    method: str
    params: Any
    message: dict[str, Any]
    session_id: str | None = None  # the params' sessionId, when it has one


class Response(msgspec.Struct, frozen=True):
    id: RequestId
    result: Any
    error: PeerError | None
    pending: PendingRequest


class Reject(msgspec.Struct, frozen=True):
    error: AcpError
    reply: bytes


Event = Request | Notification | Response | Reject


@dataclass(slots=True)
class PendingRequest:
    """What we remember about a request we sent, until its answer comes."""

    method: str
    session_id: str | None
    result_type: Any = None
    extra: dict[str, Any] = field(default_factory=dict)


def params_of(message: dict[str, Any]) -> dict[str, Any]:
    """A message's params as received (an empty dict when absent or not an object)."""
    params = message.get("params")
    return params if isinstance(params, dict) else {}


def session_id_of(params: Any) -> str | None:
    if isinstance(params, dict):
        sid = params.get("sessionId")
        if isinstance(sid, str):
            return sid
    return None


def _valid_id(value: Any) -> bool:
    # JSON-RPC ids are strings, integers or null; a bool is not an integer.
    return (
        value is None
        or isinstance(value, str)
        or (isinstance(value, int) and not isinstance(value, bool))
    )


class Connection:
    """One side of an ACP connection: `role` says which methods this side serves."""

    def __init__(
        self,
        role: Role,
        methods: dict[str, Any] | None = None,
        *,
        lenient: bool | None = None,
        speaks: tuple[int, ...] = (1,),
    ) -> None:
        if methods is None:
            from agentao.protocol.methods import METHODS

            methods = METHODS
        self.role: Role = role
        self.methods = methods
        self.speaks = speaks  # the protocol versions this side serves (see "Versions")
        self.version: int | None = None  # settled by `initialize`
        # Be strict with what a client sends an agent; lenient with what agents send clients.
        self.lenient = (role == "client") if lenient is None else lenient
        self.state: lifecycle.State = "new"
        self._accepts_all = lifecycle.accepts_all(role, self.state)
        self._sides = (role, "protocol")  # the methods this side serves (MethodSpec.side)
        self._decode: Any = None  # decode_strict or decode_lenient, bound on first use
        self._of_line: Any = None  # decode.params_of_line, bound with it
        self._passed: dict[Any, tuple[Any, Any]] = {}  # params type -> decode.passed_decoders
        self._next_id = 0
        self._pending: dict[RequestId, PendingRequest] = {}

    # ---- incoming -------------------------------------------------------------------

    def receive(self, line: bytes | Oversize) -> Event | None:
        """Turn one framed line into an event (or None when nothing is to be done)."""
        if isinstance(line, Oversize):
            return self._receive_oversize(line)
        if _PASSED_NEEDLE in line:  # most likely a streamed update: read with no dicts
            event = self._receive_passed(line)
            if event is not _DICT_PATH:
                return event
        try:
            message = _decode_json(line)
        except RecursionError:
            return self._receive_too_deep(line)
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError) as exc:
            return self._receive_refused(line, exc)
        return self.receive_message(message, line=line)

    def receive_message(
        self, message: Any, damage: salvage.Damage | None = None, *, line: bytes | None = None
    ) -> Event | None:
        """Handle one parsed message; `damage` names a value in it the wire cannot carry;
        `line`, the bytes it was parsed from, has its params read straight into types."""
        if not isinstance(message, dict):
            kind = "array" if isinstance(message, list) else type(message).__name__
            return self._reject(
                None, InvalidRequest(f"Invalid Request: expected an object, got {kind}")
            )
        msg_id = message.get("id")
        reply_id = msg_id if msg_id is None or _valid_id(msg_id) else None
        if damage is not None and not _in_payload(message, damage):
            return self._reject_envelope(message, reply_id, damage)
        if message.get("jsonrpc") != "2.0":
            return self._reject(
                reply_id, InvalidRequest('Invalid Request: "jsonrpc" must be "2.0"')
            )
        if "method" in message:
            return self._receive_call(message, reply_id, damage, line)
        if "id" in message and (("result" in message) != ("error" in message)):
            return self._receive_response(message, damage)
        return self._reject(
            reply_id, InvalidRequest("Invalid Request: no method, and not a response")
        )

    # ---- the streamed method, read from the line's bytes -------------------------------

    def _receive_passed(self, line: bytes) -> Event | object | None:
        """A `session/update` read straight into its types, its `update` also kept as the
        bytes received (msgspec.Raw, in the message's place of the object), for a relay to
        pass on: no dicts are made for it. `_DICT_PATH` for anything this does not read as
        it stands (another message, bad JSON, params that need a repair): the dict path
        then reads the line as before, with every check, repair and error it has."""
        spec = self.methods.get(_PASSED_METHOD)
        if spec is None or spec.side not in self._sides:
            return _DICT_PATH
        if not self._accepts_all and not lifecycle.accepts(self.role, self.state, _PASSED_METHOD):
            return _DICT_PATH
        head, whole = self._passed.get(spec.params) or self._passed_decoders(spec.params)
        try:
            if not line.isascii():
                line.decode()  # a member skipped as bytes is checked nowhere else
            envelope = head(line)
            if (
                envelope.method != _PASSED_METHOD
                or envelope.jsonrpc != "2.0"
                or envelope.id is not _UNSET
                or envelope.params is _UNSET
            ):
                return _DICT_PATH
            params = whole(line).params
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            return _DICT_PATH
        member = getattr(envelope.params, _PASSED_MEMBER)
        session_id = params.session_id
        wire_params = {"sessionId": session_id, _PASSED_MEMBER: member}
        if params.meta is not None:
            wire_params["_meta"] = params.meta
        message = {"jsonrpc": "2.0", "method": _PASSED_METHOD, "params": wire_params}
        return Notification(_PASSED_METHOD, params, message, session_id)

    def _passed_decoders(self, tp: Any) -> tuple[Any, Any]:
        from agentao.protocol.decode import passed_decoders

        self._passed[tp] = found = passed_decoders(tp, _PASSED_MEMBER, self.lenient)
        return found

    # ---- lines the fast path refused (see salvage.py) --------------------------------

    def _receive_refused(self, line: bytes, exc: Exception) -> Event | None:
        from agentao.protocol import salvage  # only for lines the fast path refused

        parsed = salvage.parse_refused(line)
        if parsed is None:
            return self._reject(None, ParseError(f"Parse error: {exc}"))
        message, damage = parsed
        return self.receive_message(message, damage[0] if damage else None)

    def _receive_too_deep(self, line: bytes) -> Event | None:
        from agentao.protocol import salvage  # only for lines the fast path refused

        found = salvage.scan_envelope(line[:_DEEP_SCAN_BYTES], line[-_DEEP_SCAN_BYTES:])
        if found.id is None:
            return self._reject(None, ParseError("Parse error: JSON nested too deeply"))
        error = InvalidRequest("Invalid Request: JSON nested too deeply", {"reason": "depth"})
        return self._answer_or_fail(found, error)

    def _receive_oversize(self, line: Oversize) -> Event | None:
        from agentao.protocol import salvage  # only for lines the fast path refused

        found = salvage.scan_envelope(line.head, line.tail)
        return self._answer_or_fail(found, LineTooLong(line.size, line.limit))

    def _answer_or_fail(self, found: salvage.Envelope, error: AcpError) -> Event | None:
        """Refuse a request we cannot read with its own id; a response we cannot read
        fails our request it answers (never a reply to a reply)."""
        if not found.is_response:
            return self._reject(found.id, error)
        pending = self._pending.pop(found.id, None) if found.id is not None else None
        if pending is None:
            log.warning("dropping a response we cannot read: %s", error.message)
            return None
        return Response(found.id, None, PeerError(error.code, error.message, error.data), pending)

    def _reject_envelope(
        self, message: dict[str, Any], reply_id: RequestId, damage: salvage.Damage
    ) -> Event | None:
        """A damaged id, method, jsonrpc or other envelope member."""
        if damage.top == "id":
            reply_id = None  # an id we cannot write back
        elif damage.top == "method" and isinstance(message.get("method"), str):
            if "id" not in message:
                return None  # an unknown notification, as any other
            from agentao.protocol.salvage import printable

            error: AcpError = MethodNotFound(printable(message["method"]))
            return self._reject(reply_id, error)
        error = InvalidRequest(
            f"Invalid Request: {damage.reason} - at `{damage.where()}`",
            {"field": damage.where()[2:], "reason": damage.reason},
        )
        return self._reject(reply_id, error)

    # ---- calls and responses ---------------------------------------------------------

    def _receive_call(
        self,
        message: dict[str, Any],
        reply_id: RequestId,
        damage: salvage.Damage | None = None,
        line: bytes | None = None,
    ) -> Event | None:
        method = message["method"]
        is_request = "id" in message
        if not isinstance(method, str) or not method:
            return self._reject(
                reply_id, InvalidRequest('Invalid Request: "method" must be a string')
            )
        if is_request and not _valid_id(message["id"]):
            return self._reject(
                None, InvalidRequest('Invalid Request: "id" must be a string or integer')
            )
        spec = self.methods.get(method)  # `_spec_for`, inline: this runs once per update
        if spec is not None and spec.side not in self._sides:
            spec = None
        if spec is None and not method.startswith("_") and method != "$/cancel_request":
            if is_request:
                return self._reject(reply_id, MethodNotFound(method))
            log.debug("ignoring unknown notification %s", method)
            return None
        if not self._accepts_all and not lifecycle.accepts(self.role, self.state, method):
            if is_request:
                return self._reject(reply_id, NotInitialized())
            log.warning("ignoring %s before initialize", method)
            return None
        raw_params = message.get("params")
        try:
            if damage is not None:
                raise _damaged_params(damage)
            if method == "initialize" and self._negotiates:
                spec = self._settle_version(raw_params)
            if type(raw_params) is dict and spec is not None and spec.params is not None:
                # `_decode_params`'s common case, inline (once per streamed update)
                params = self._decode_valid(spec.params, raw_params, line)
            else:
                params = self._decode_params(spec, raw_params)
        except (InvalidParams, UnsupportedVersion) as exc:
            if is_request:
                return self._reject(reply_id, exc)
            log.warning("dropping %s with invalid params: %s", method, exc.message)
            return None
        if is_request:
            return Request(message["id"], method, params, message)
        session_id = raw_params.get("sessionId") if isinstance(raw_params, dict) else None
        return Notification(
            method, params, message, session_id if isinstance(session_id, str) else None
        )

    @property
    def _negotiates(self) -> bool:
        return self.role == "agent" and self.speaks != (1,)

    def _settle_version(self, params: Any) -> Any:
        """Read the version `initialize` asks for, switch to the one we answer with, and
        return that version's `initialize` spec."""
        from agentao.protocol import versions  # only when an initialize arrives

        if params is not None and not isinstance(params, dict):
            raise InvalidParams('Invalid params: "params" must be an object')
        requested = versions.requested_version(params)
        self.use_version(versions.negotiate(requested, self.speaks))
        return self._spec_for("initialize")

    def use_version(self, version: int) -> None:
        """Speak `version` from now on: decode with its method table."""
        from agentao.protocol import versions

        self.methods = versions.method_table(version)
        self.version = version

    def _spec_for(self, method: str) -> Any:
        spec = self.methods.get(method)
        if spec is None or spec.side not in self._sides:
            return None
        return spec

    def _decode_params(self, spec: Any, params: Any) -> Any:
        if params is not None and not isinstance(params, dict):
            raise InvalidParams('Invalid params: "params" must be an object')
        if spec is None or spec.params is None:
            return params
        return self._decode_valid(spec.params, {} if params is None else params)

    def _decode_valid(self, tp: Any, params: dict[str, Any], line: bytes | None = None) -> Any:
        decode = self._decode or self._decoder()
        if line is not None:
            try:
                return self._of_line(tp, line, lenient=self.lenient)
            except msgspec.DecodeError:
                pass  # as they stand they do not fit: the dict path repairs, or names why
        try:
            return decode(tp, params)
        except msgspec.ValidationError as exc:
            raise InvalidParams(f"Invalid params: {exc}") from None

    def _receive_response(
        self, message: dict[str, Any], damage: salvage.Damage | None = None
    ) -> Event | None:
        msg_id = message["id"]
        pending = self._pending.pop(msg_id, None) if _valid_id(msg_id) else None
        if pending is None:
            log.warning("dropping a response to unknown request id %r", msg_id)
            return None
        if damage is not None:
            error = PeerError(
                InvalidParams.code,
                f"invalid {pending.method} {damage.top} from peer: {damage.reason}"
                f" - at `{damage.where(1)}`",
                {"method": pending.method, "reason": damage.reason},
            )
            return Response(msg_id, None, error, pending)
        if "error" in message:
            return Response(msg_id, None, _peer_error(message["error"]), pending)
        result = message["result"]
        if pending.result_type is not None:
            result = self._decode_result(pending, result)
            if isinstance(result, PeerError):
                return Response(msg_id, None, result, pending)
        return Response(msg_id, result, None, pending)

    def _decoder(self) -> Any:
        # Imported on first use: the generated types are the heaviest import of this layer.
        if self._decode is None:
            from agentao.protocol.decode import decode_lenient, decode_strict, params_of_line

            self._decode = decode_lenient if self.lenient else decode_strict
            self._of_line = params_of_line
        return self._decode

    def _decode_result(self, pending: PendingRequest, result: Any) -> Any:
        try:
            return self._decoder()(pending.result_type, {} if result is None else result)
        except msgspec.ValidationError as exc:
            return PeerError(
                InvalidParams.code,
                f"invalid {pending.method} result from peer: {exc}",
                {"method": pending.method},
            )

    def _reject(self, reply_id: RequestId, error: AcpError) -> Reject:
        return Reject(error, self.reply_error(reply_id, error))

    # ---- outgoing -------------------------------------------------------------------

    def request(
        self, method: str, params: Any = None, *, result_type: Any = ...
    ) -> tuple[int, bytes]:
        """Bytes for a new request, and its id. The answer comes back as a `Response`."""
        request_id = self._next_id
        self._next_id += 1
        if result_type is ...:
            spec = self.methods.get(method)
            result_type = spec.result if spec is not None else None
        session_id = _params_session_id(params)
        self._pending[request_id] = PendingRequest(method, session_id, result_type)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        return request_id, _encode(message) + b"\n"

    def forget(self, request_id: RequestId) -> PendingRequest | None:
        """Stop waiting for an answer (cancelled locally); a late answer is then dropped."""
        return self._pending.pop(request_id, None)

    def notify(self, method: str, params: Any = None) -> bytes:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        return _encode(message) + b"\n"

    def reply(self, request: Request, result: Any) -> bytes:
        self.state = lifecycle.after_reply(self.state, request.method)
        self._accepts_all = lifecycle.accepts_all(self.role, self.state)
        return (
            _encode(
                {"jsonrpc": "2.0", "id": request.id, "result": {} if result is None else result}
            )
            + b"\n"
        )

    def reply_error(self, request_id: RequestId, error: AcpError) -> bytes:
        return _encode({"jsonrpc": "2.0", "id": request_id, "error": error.to_wire()}) + b"\n"

    def close(self) -> list[tuple[RequestId, PendingRequest]]:
        """The peer is gone: every request still waiting, to be failed by the caller."""
        pending = list(self._pending.items())
        self._pending.clear()
        return pending

    @property
    def pending_count(self) -> int:
        return len(self._pending)


_PAYLOAD = frozenset(
    {"params", "result", "error"}
)  # damage there is the payload's, not the envelope's
_DEEP_SCAN_BYTES = 4096  # of a line nested too deeply, each end is scanned for its id


def _in_payload(message: dict[str, Any], damage: salvage.Damage) -> bool:
    """Damage in a call's params or a response's result/error (else: in the envelope)."""
    if "method" in message:
        return damage.top == "params"
    return damage.top in ("result", "error")


def _damaged_params(damage: salvage.Damage) -> InvalidParams:
    where = damage.where(1)
    return InvalidParams(
        f"Invalid params: {damage.reason} - at `{where}`",
        {"field": where[2:], "reason": damage.reason},
    )


def _params_session_id(params: Any) -> str | None:
    if params is None:
        return None
    if isinstance(params, dict):
        return session_id_of(params)
    sid = getattr(params, "session_id", None)
    return sid if isinstance(sid, str) else None


def _peer_error(error: Any) -> PeerError:
    if isinstance(error, dict) and isinstance(error.get("code"), int):
        return PeerError(error["code"], str(error.get("message", "")), error.get("data"))
    return PeerError(InvalidRequest.code, f"malformed error from peer: {error!r}")


__all__ = [
    "Connection",
    "Event",
    "Notification",
    "PendingRequest",
    "Reject",
    "Request",
    "RequestId",
    "Response",
    "Role",
    "params_of",
    "session_id_of",
]
