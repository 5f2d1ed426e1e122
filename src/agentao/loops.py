"""Which event loop the command's processes run: asyncio's, or uvloop's when asked for.

uvloop (libuv underneath) does the loop's own work — the selector, callbacks, futures,
socket and pipe transports — in C. Measured on a loaded 2-core machine it did not pay
clearly: the same CPU per caller's-tool round trip (bench/tools.py), remote ACP's per-turn
TTFT moving both ways in two runs (bench/remote.py), 100 cold streams' p99 666 -> 484 ms
in one run (bench/gateway.py --before-env AGENTAO_EVENT_LOOP=asyncio). It is a
dependency on Linux and macOS (pyproject.toml).

`AGENTAO_EVENT_LOOP` chooses: `asyncio` (the default) or `uvloop`. uvloop is not the
default yet: with it, tests/gateway/test_recovery.py's kill -9 test failed 2 runs of 6 (a
task-stream frame reached its WebSocket reader ~20 s late while another response's SSE
stream lay unread), which nobody has explained. Every entry point that
runs a loop asks here: `agentao --acp` (server/main.py), `agentao run`, `connect`,
`demo` and the interactive `agentao` (cli/), and `agentao serve` (uvicorn's `loop`
setting, gateway/serving.py). The gateway passes it on to our agent (`AGENTAO_*`,
gateway/confine.py), so one setting turns uvloop on for a gateway and its agents.

What the code asks of a loop is there on both: subprocesses are spawned and reaped by
the loop itself (uvloop needs no child watcher), and signal handlers, `add_reader` and
`call_soon_threadsafe` (the store's writer thread) are the same calls on both. Two
differences were found: uvloop's `add_reader` leaves a descriptor non-blocking (handled:
`run` puts a terminal back as found), and the recovery test above (not explained yet).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Coroutine, Mapping
from typing import Any, TypeVar

EVENT_LOOP_ENV = "AGENTAO_EVENT_LOOP"
UVLOOP, ASYNCIO = "uvloop", "asyncio"
EVENT_LOOPS = (UVLOOP, ASYNCIO)

T = TypeVar("T")


class EventLoopSettingError(ValueError):
    """`AGENTAO_EVENT_LOOP` names no loop this process can run."""


def uvloop_installed() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True


def event_loop_name(environ: Mapping[str, str] | None = None) -> str:
    """`uvloop` or `asyncio`: what `AGENTAO_EVENT_LOOP` asks for, else asyncio (see above)."""
    value = (os.environ if environ is None else environ).get(EVENT_LOOP_ENV, "").strip().lower()
    if not value:
        return ASYNCIO
    if value not in EVENT_LOOPS:
        raise EventLoopSettingError(
            f"{EVENT_LOOP_ENV}={value!r} names no event loop: use {UVLOOP!r} or {ASYNCIO!r}"
        )
    if value == UVLOOP and not uvloop_installed():
        raise EventLoopSettingError(
            f"{EVENT_LOOP_ENV}=uvloop, but uvloop is not installed here: install it, or use "
            f"{ASYNCIO!r}"
        )
    return value


def loop_factory(
    environ: Mapping[str, str] | None = None,
) -> Callable[[], asyncio.AbstractEventLoop] | None:
    """A new loop of the chosen kind (None: asyncio's default)."""
    if event_loop_name(environ) == ASYNCIO:
        return None
    import uvloop

    return uvloop.new_event_loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """`asyncio.run(main)` on the chosen loop. A bad `AGENTAO_EVENT_LOOP` ends the process
    with a message naming it (before anything runs). A terminal on stdin/stdout/stderr is
    left blocking or not as it was found: uvloop's `add_reader` (prompt_toolkit's input,
    a question read at the terminal) turns blocking off and leaves it so, and the terminal's
    open file is the shell's too, whose next read would then fail."""
    try:
        factory = loop_factory()
    except EventLoopSettingError as exc:
        main.close()
        raise SystemExit(f"agentao: {exc}") from None
    modes = _terminal_modes()
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            return runner.run(main)
    finally:
        for fd, blocking in modes.items():
            with contextlib.suppress(OSError):
                os.set_blocking(fd, blocking)


def _terminal_modes() -> dict[int, bool]:
    """Whether each standard descriptor that is a terminal blocks."""
    modes = {}
    for fd in (0, 1, 2):
        with contextlib.suppress(OSError):
            if os.isatty(fd):
                modes[fd] = os.get_blocking(fd)
    return modes


__all__ = [
    "ASYNCIO",
    "EVENT_LOOPS",
    "EVENT_LOOP_ENV",
    "UVLOOP",
    "EventLoopSettingError",
    "event_loop_name",
    "loop_factory",
    "run",
    "uvloop_installed",
]
