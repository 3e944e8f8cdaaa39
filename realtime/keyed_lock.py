"""One holder at a time per key, on one event loop: for work on one thing (a match) that must
not interleave with itself, while work on other things goes on."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Hashable


class KeyedLock:
    """``async with locks.held(key):`` waits for whoever holds ``key``, in arrival order. A
    key's lock exists only while someone holds or waits for it, so a process that has seen a
    million keys keeps none."""

    def __init__(self):
        self._locks: dict[Hashable, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def held(self, key: Hashable) -> AsyncIterator[None]:
        lock, users = self._locks.get(key, (None, 0))
        lock = lock or asyncio.Lock()
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

    def __len__(self) -> int:
        """How many keys are held or waited for."""
        return len(self._locks)
