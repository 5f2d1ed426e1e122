"""The client's channel to the agent: requests and notifications, typed by the method table.

`call("session/new", params)` sends the request and decodes its result as the type the
generated method table of the negotiated version (`Channel.version`: `protocol/methods.py`
or `protocol/v2/methods.py`) gives that method, leniently: an odd
field from a real agent does not fail the call. Methods outside the table (an
extension such as `_agentao.cn/set_model`) go through `call_raw`. Every wait has a
named limit (`Timeouts`), and every way the agent can fail us ends as one of the
client's errors: AgentError (it answered with an error), AgentDisconnected (it went
away, with its exit code and the tail of its stderr), ClientTimeout, ProtocolViolation.

`Session` and `Turn` talk to the agent only through this object, so they need nothing
of `Client` itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine
from typing import Any

import msgspec

from agentao.client.config import Timeouts
from agentao.client.errors import (
    AgentDisconnected,
    AgentError,
    ClientTimeout,
    ProtocolViolation,
)
from agentao.client.process import AgentProcess
from agentao.protocol.endpoint import Endpoint, Sent
from agentao.protocol.errors import ConnectionClosed, PeerError

log = logging.getLogger("agentao.client")


class Channel:
    """Requests to one agent over one endpoint."""

    def __init__(
        self, endpoint: Endpoint, timeouts: Timeouts, process: AgentProcess | None = None
    ) -> None:
        self.endpoint = endpoint
        self.timeouts = timeouts
        self.process = process
        self.version = 1  # the protocol version `initialize` settled (client.py)

    async def call(self, method: str, params: Any, *, needed: bool = True) -> Any:
        """Request `method` (one the agent handles) and decode its result by the table;
        with `needed=False` an undecodable result is logged and None returned."""
        raw = await self.call_raw(method, params, self.timeouts.request)
        try:
            return self.decode(result_type(method, self.version), raw)
        except ProtocolViolation as exc:
            if needed:
                raise
            log.warning("%s: %s (ignored)", method, exc)
            return None

    async def call_raw(
        self, method: str, params: Any, timeout: float | None = None, timeout_name: str = "request"
    ) -> Any:
        """Request any method; its raw result."""
        try:
            return await asyncio.wait_for(
                self.endpoint.request(method, params, result_type=None), timeout
            )
        except PeerError as exc:
            raise AgentError(method, exc.code, exc.message, exc.data) from None
        except ConnectionClosed:
            raise await self.disconnected(f"the agent disconnected during {method}") from None
        except TimeoutError:
            raise ClientTimeout(timeout_name, timeout or 0.0, method) from None

    def send_raw(self, method: str, params: Any) -> Coroutine[Any, Any, Any]:
        """Write a request now, in this step; the returned coroutine waits for its raw
        result (no time limit), with `call_raw`'s errors."""
        try:
            sent = self.endpoint.send_request(method, params, result_type=None)
        except ConnectionClosed:
            return self._closed_during(method)
        except Exception as exc:  # raised where the result is awaited, as call_raw raises it
            return _raising(exc)
        return self._raw_reply(method, sent)

    async def _raw_reply(self, method: str, sent: Sent) -> Any:
        try:
            return await self.endpoint.reply_to(sent)
        except PeerError as exc:
            raise AgentError(method, exc.code, exc.message, exc.data) from None
        except ConnectionClosed:
            raise await self.disconnected(f"the agent disconnected during {method}") from None

    async def _closed_during(self, method: str) -> Any:
        raise await self.disconnected(f"the agent disconnected during {method}")

    async def notify(self, method: str, params: Any = None) -> None:
        try:
            await self.endpoint.notify(method, params)
        except ConnectionClosed:
            raise await self.disconnected(f"agent disconnected before {method}") from None

    def decode(self, type_: Any, raw: Any) -> Any:
        """`raw` as `type_`, leniently (the schema's own defaults on error)."""
        from agentao.protocol.decode import decode_lenient

        try:
            return decode_lenient(type_, {} if raw is None else raw)
        except (msgspec.ValidationError, TypeError) as exc:
            raise ProtocolViolation(f"bad {type_.__name__} from the agent: {exc}") from None

    async def disconnected(self, what: str) -> AgentDisconnected:
        """The error for an agent that went away: its exit code and stderr tail."""
        process = self.process
        code = await process.wait(self.timeouts.eof_grace) if process is not None else None
        tail = process.stderr_tail() if process is not None else ""
        return AgentDisconnected(what, exit_code=code, stderr_tail=tail)

    async def settle_after_disconnect(self) -> None:
        """After EOF: let the endpoint hand over every update it read before it."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.endpoint.wait_closed(), self.timeouts.eof_grace)


def result_type(method: str, version: int = 1) -> Any:
    """The result type `version`'s method table gives a request the agent handles."""
    from agentao.protocol.versions import method_table

    spec = method_table(version).get(method)
    if spec is None or spec.side != "agent" or spec.kind != "request" or spec.result is None:
        raise ValueError(f"{method} is not a request the agent handles; use call_raw")
    return spec.result


async def _raising(error: Exception) -> Any:
    raise error


__all__ = ["Channel", "result_type"]
