"""One asyncio lock per key: a conversation's lease is claimed or released under its id's
lock, one at a time (sessions.py), so an idle sweep's release never takes the lease of the
conversation's next turn."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator


class KeyedLocks:
    """One asyncio lock per key, kept only while someone holds or waits for it."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (asyncio.Lock(), 0))
        self._locks[key] = (lock, users + 1)
        try:
            async with lock:
                yield
        finally:
            lock, users = self._locks[key]
            if users == 1:
                del self._locks[key]
            else:
                self._locks[key] = (lock, users - 1)


__all__ = ["KeyedLocks"]
