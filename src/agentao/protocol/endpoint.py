"""The asyncio side of a connection: a read loop, handler tasks and futures.

Theory of operation. `run()` pumps bytes from a reader through `LineBuffer`
and `Connection.receive()`; it never awaits a handler, so control messages
(`session/cancel`, `$/cancel_request`, replies) are seen at once however busy
the handlers are.

* `initialize` is a barrier (lifecycle.BARRIERS): reading waits for its reply,
  so a client that pipelines `session/new` right behind it is served in order.
* A handler takes the decoded params, and, when it declares a second parameter, the
  message as received (to see fields the schema does not know, or pass them on):
  explicit, not a context variable the handler must know to look up.
* Any other request runs in its own task; its reply is written when the handler returns.
  Notifications the handler sent meanwhile were written first, because writes
  happen synchronously in call order.
* The handler object may serve each protocol version with its own object: when it has
  `for_version(version)`, methods are looked up on what that returns for the version
  `initialize` settled (`Connection.version`), so a v2 client never reaches a v1 handler.
* A notification goes on its session's lane (`lanes.py`) and is handled in
  arrival order with the other notifications of that session: a synchronous handler
  at once, as its line is read, when nothing of that session waits before it.
* A response resolves the future of our request. If that request named a
  session whose lane still holds notifications, the future is resolved from
  the lane, behind them: a caller of `session/prompt` sees every update of the
  turn before the result.
* `$/cancel_request` cancels the named handler task, which answers -32800.
  Cancelling a task that awaits `request()` sends `$/cancel_request` to the peer.
* At EOF, every request still waiting for the peer fails with ConnectionClosed
  at once; handlers still running get `Limits.shutdown_grace` to answer.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

from agentao.protocol import lifecycle
from agentao.protocol.connection import (
    Connection,
    Notification,
    Reject,
    Request,
    RequestId,
    Response,
    Role,
)
from agentao.protocol.errors import (
    AcpError,
    ConnectionClosed,
    InternalError,
    MethodNotFound,
    PeerError,
    RequestCancelled,
)
from agentao.protocol.framing import (
    DEFAULT_MAX_LINE_BYTES,
    DEFAULT_OVERSIZE_KEEP_BYTES,
    LineBuffer,
)
from agentao.protocol.lanes import Lanes

log = logging.getLogger("agentao.protocol")

Handler = Callable[[Any, dict[str, Any]], Any]  # (params, message as received) -> result


@dataclass(frozen=True, slots=True)
class Limits:
    """Named limits of one connection."""

    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES
    # Of a line over max_line_bytes, the bytes kept from each end to find its id (so the
    # sender's request is answered, not left waiting); the middle is discarded unread.
    oversize_keep_bytes: int = DEFAULT_OVERSIZE_KEEP_BYTES
    read_chunk_bytes: int = 256 * 1024
    shutdown_grace: float = 5.0  # seconds running handlers get to answer after EOF


class Writer(Protocol):
    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...


class Reader(Protocol):
    async def read(self, n: int = -1) -> bytes: ...


@dataclass(frozen=True, slots=True)
class Sent:
    """A request on the wire, its result to come (`Endpoint.send_request`)."""

    request_id: RequestId
    future: asyncio.Future[Any]


class Endpoint:
    """One side of an ACP conversation, bound to a handler object (see docs/protocol-api.md)."""

    def __init__(
        self,
        handler: object,
        *,
        role: Role,
        limits: Limits | None = None,
        connection: Connection | None = None,
    ) -> None:
        self.handler = handler
        self.limits = limits or Limits()
        self.conn = connection or Connection(role)
        self._writer: Writer | None = None
        self._futures: dict[RequestId, asyncio.Future[Any]] = {}
        self._serving: dict[RequestId, asyncio.Task[None]] = {}
        self._cancelled: set[RequestId] = set()
        self._lanes = Lanes()
        self._handlers: dict[tuple[int | None, str], Any] = {}  # (version, method)
        self._closed = asyncio.Event()
        self._peer_gone = False

    # ---- running --------------------------------------------------------------------

    def attach(self, writer: Writer) -> None:
        """Bind the writer, so requests can be sent before `run()` starts reading."""
        self._writer = writer

    def start(self, reader: Reader, writer: Writer) -> asyncio.Task[None]:
        """Attach `writer` now and read in a background task (requests may be sent at once)."""
        self.attach(writer)
        return asyncio.get_running_loop().create_task(self.run(reader))

    async def run(self, reader: Reader, writer: Writer | None = None) -> None:
        """Read until EOF, dispatching everything; then fail what still waits."""
        if writer is not None:
            self.attach(writer)
        buffer = LineBuffer(self.limits.max_line_bytes, self.limits.oversize_keep_bytes)
        try:
            while True:
                data = await reader.read(self.limits.read_chunk_bytes)
                if not data:
                    break
                for line in buffer.feed(data):
                    if barrier := self._dispatch(line):
                        await barrier
            for line in buffer.flush():
                if barrier := self._dispatch(line):
                    await barrier
        except (ConnectionError, OSError) as exc:
            log.info("read loop ended: %s", exc)
        finally:
            self._fail_pending(ConnectionClosed("the peer closed the connection"))
        await self._finish_serving()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    # ---- outgoing -------------------------------------------------------------------

    async def request(self, method: str, params: Any = None, *, result_type: Any = ...) -> Any:
        """Send a request and wait for its result (raises PeerError / ConnectionClosed)."""
        return await self.reply_to(self.send_request(method, params, result_type=result_type))

    def send_request(self, method: str, params: Any = None, *, result_type: Any = ...) -> Sent:
        """Write a request now, in the caller's step (ConnectionClosed if it cannot go);
        `reply_to` waits for its result. A caller that would only start a task to send
        it saves the loop pass before the task's first step (a prompt on its way)."""
        if self._peer_gone or self._closed.is_set():
            raise ConnectionClosed(f"cannot send {method}: the connection is closed")
        request_id, data = self.conn.request(method, params, result_type=result_type)
        sent = Sent(request_id, asyncio.get_running_loop().create_future())
        self._futures[request_id] = sent.future
        try:
            self._write(data)
        except BaseException:
            self._release(sent)
            raise
        return sent

    async def reply_to(self, sent: Sent) -> Any:
        """The result of a request `send_request` wrote; cancelling the wait withdraws the
        request (`$/cancel_request`)."""
        try:
            await self._drain()
            return await sent.future
        except asyncio.CancelledError:
            if self.conn.forget(sent.request_id) is not None:
                self._safe_write(
                    self.conn.notify("$/cancel_request", {"requestId": sent.request_id})
                )
            raise
        finally:
            self._release(sent)  # a failed write leaves nothing waiting either

    def _release(self, sent: Sent) -> None:
        self.conn.forget(sent.request_id)
        self._futures.pop(sent.request_id, None)

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification; it is on the wire (in order) before this returns."""
        if self._closed.is_set():
            raise ConnectionClosed(f"cannot send {method}: the connection is closed")
        self._write(self.conn.notify(method, params))
        await self._drain()

    def _write(self, data: bytes) -> None:
        if self._writer is None:
            raise RuntimeError("Endpoint has no writer: call attach() or run() first")
        self._writer.write(data)

    async def _drain(self) -> None:
        try:
            await self._writer.drain()  # type: ignore[union-attr]
        except (ConnectionError, OSError) as exc:
            raise ConnectionClosed(f"the peer stopped reading: {exc}") from exc

    # ---- incoming -------------------------------------------------------------------

    def _dispatch(self, line: Any) -> Awaitable[None] | None:
        """Route one line; returns an awaitable when reading must wait for it (a barrier)."""
        event = self.conn.receive(line)
        if event is None:
            return None
        if type(event) is Notification:  # the common case (every streamed update), first
            self._on_notification(event)
            return None
        if isinstance(event, Request) and lifecycle.is_barrier(event.method):
            return self._serve(event)
        if isinstance(event, Request):
            task = asyncio.get_running_loop().create_task(self._serve(event))
            self._serving[event.id] = task
            task.add_done_callback(lambda done, request=event: self._served(done, request))
        elif isinstance(event, Notification):
            self._on_notification(event)
        elif isinstance(event, Response):
            self._on_response(event)
        elif isinstance(event, Reject):
            log.info("rejected input: %s", event.error.message)
            self._safe_write(event.reply)
        return None

    def _on_notification(self, event: Notification) -> None:
        if event.method == "$/cancel_request":
            self._cancel_serving(event.message.get("params"))
            return
        # `_find_handler`'s cache, read inline: this runs once per streamed update
        handler = self._handlers.get((self.conn.version, event.method))
        if handler is None:
            handler = self._find_handler(event.method)
            if handler is None:
                log.debug("no handler for notification %s", event.method)
                return
        # The handler and its arguments, not a closure: an idle lane calls it at once.
        self._lanes.submit(event.session_id, handler, event.params, event.message)

    def _on_response(self, event: Response) -> None:
        future = self._futures.get(event.id)
        if future is None:
            return

        def settle() -> None:
            if future.done():
                return
            if event.error is not None:
                future.set_exception(event.error)
            else:
                future.set_result(event.result)

        session_id = event.pending.session_id
        if session_id is not None and self._lanes.busy(session_id):
            self._lanes.submit(session_id, settle)
        else:
            settle()

    def _cancel_serving(self, params: Any) -> None:
        request_id = params.get("requestId") if isinstance(params, dict) else None
        task = self._serving.get(request_id)
        if task is None:
            log.debug("$/cancel_request for unknown or finished request %r", request_id)
            return
        self._cancelled.add(request_id)
        task.cancel()

    def _served(self, task: asyncio.Task[None], request: Request) -> None:
        """A request's task ended. One cancelled before its first step never reached the
        handler's own -32800, so it is answered here."""
        self._serving.pop(request.id, None)
        if task.cancelled() and request.id in self._cancelled:
            self._cancelled.discard(request.id)
            self._safe_write(self.conn.reply_error(request.id, RequestCancelled()))

    async def _serve(self, request: Request) -> None:
        try:
            handler = self._find_handler(request.method)
            if handler is None:
                raise MethodNotFound(request.method)
            result = await handler(request.params, request.message)
            data = self.conn.reply(request, _to_result(result))
        except asyncio.CancelledError:
            if request.id not in self._cancelled:
                raise
            self._cancelled.discard(request.id)
            data = self.conn.reply_error(request.id, RequestCancelled())
        except PeerError as exc:
            # The peer's error to one of our own calls is not ours to re-send as is.
            log.warning("handler for %s got an error from the peer: %r", request.method, exc)
            error = InternalError(f"Internal error: the peer answered with error {exc.code}")
            data = self.conn.reply_error(request.id, error)
        except AcpError as exc:
            data = self.conn.reply_error(request.id, exc)
        except ConnectionClosed:
            return
        except Exception as exc:
            log.exception("handler for %s failed", request.method)
            error = InternalError(f"Internal error: {type(exc).__name__}")
            data = self.conn.reply_error(request.id, error)
        self._safe_write(data)

    def _find_handler(self, method: str) -> Handler | None:
        key = (self.conn.version, method)
        handler = self._handlers.get(key)
        if handler is None:
            found = self._lookup_handler(method)
            if found is not None:  # misses are not cached: extensions may be added later
                handler = self._handlers[key] = _two_arguments(found)
        return handler

    def _lookup_handler(self, method: str) -> Any:
        target = self._versioned_handler()
        if method.startswith("_"):
            extensions = getattr(target, "extensions", None) or {}
            return extensions.get(method)
        spec = self.conn.methods.get(method)
        name = spec.python_name if spec is not None else method.replace("/", "_")
        return getattr(target, name, None)

    def _versioned_handler(self) -> object:
        """The object serving the connection's protocol version (see the module docstring)."""
        for_version = getattr(self.handler, "for_version", None)
        return self.handler if for_version is None else for_version(self.conn.version)

    def _safe_write(self, data: bytes) -> None:
        if self._closed.is_set():
            return
        try:
            self._write(data)
        except (ConnectionError, OSError, RuntimeError) as exc:
            log.info("could not write a reply: %s", exc)

    # ---- shutdown -------------------------------------------------------------------

    def _fail_pending(self, error: ConnectionClosed) -> None:
        # Only requests with no answer yet: an answer already queued behind its
        # session's notifications is still delivered, in order.
        self._peer_gone = True
        for request_id, _pending in self.conn.close():
            future = self._futures.get(request_id)
            if future is not None and not future.done():
                future.set_exception(error)

    async def _finish_serving(self) -> None:
        try:
            await self._lanes.join()
            if self._serving:
                _done, running = await asyncio.wait(
                    list(self._serving.values()), timeout=self.limits.shutdown_grace
                )
                for task in running:
                    task.cancel()
        finally:
            self._closed.set()

    async def aclose(self) -> None:
        """Stop serving now: cancel handlers and fail everything still waiting."""
        error = ConnectionClosed("the connection was closed locally")
        self._fail_pending(error)
        for future in self._futures.values():
            if not future.done():
                future.set_exception(error)
        self._lanes.cancel()
        for task in list(self._serving.values()):
            task.cancel()
        self._closed.set()


def _two_arguments(handler: Any) -> Handler:
    """`handler` as a (params, message) call, whether or not it takes the message."""
    try:
        positional = [
            p
            for p in inspect.signature(handler).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]
    except (TypeError, ValueError):  # no signature to read: the common one-argument form
        positional = []
    if len(positional) >= 2 or any(p.kind is p.VAR_POSITIONAL for p in positional):
        return handler  # type: ignore[no-any-return]
    return lambda params, _message: handler(params)


def _to_result(result: Any) -> Any:
    return {} if result is None else result


__all__ = ["Endpoint", "Handler", "Limits", "Reader", "Writer"]
