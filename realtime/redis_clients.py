"""Redis connections for the match service: one sync client per process, one asyncio client per
event loop (an asyncio client cannot outlive the loop it was made on).

Both draw from a blocking pool of ``REDIS_POOL_SIZE`` connections: when every connection is in
use a caller waits up to ``REDIS_POOL_TIMEOUT_MS`` and then gets ``PoolBusy``, which means "the
service is busy, try again", never "Redis is down" (a flood must not look like a timing fault).
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Callable

import redis
import redis.asyncio
from django.conf import settings
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)


class PoolBusy(RedisConnectionError):
    """Every connection of this process's pool stayed in use for the whole wait."""


class _AsyncPool(redis.asyncio.BlockingConnectionPool):
    async def get_connection(self, *args, **kwargs):
        try:
            return await super().get_connection(*args, **kwargs)
        except RedisConnectionError as error:
            if isinstance(error.__cause__, asyncio.TimeoutError):
                raise PoolBusy("no Redis connection was free in time") from error
            raise


class _SyncPool(redis.BlockingConnectionPool):
    def get_connection(self, *args, **kwargs):
        # redis-py raises a bare ConnectionError from an empty queue; nothing else comes from
        # there before a connection is handed out.
        try:
            return super().get_connection(*args, **kwargs)
        except RedisConnectionError as error:
            if str(error) == "No connection available.":
                raise PoolBusy("no Redis connection was free in time") from error
            raise


_sync_client: redis.Redis | None = None
_async_clients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _options() -> dict:
    timeout = getattr(settings, "REDIS_SOCKET_TIMEOUT_S", 1.0)
    return {
        "socket_timeout": timeout,
        "socket_connect_timeout": timeout,
        "decode_responses": True,
        "max_connections": getattr(settings, "REDIS_POOL_SIZE", 100),
        "timeout": getattr(settings, "REDIS_POOL_TIMEOUT_MS", 500) / 1000,
    }


def sync_redis() -> redis.Redis:
    global _sync_client
    if _sync_client is None:
        pool = _SyncPool.from_url(settings.REDIS_URL, **_options())
        _sync_client = redis.Redis(connection_pool=pool)
    return _sync_client


def async_redis() -> redis.asyncio.Redis:
    loop = asyncio.get_running_loop()
    client = _async_clients.get(loop)
    if client is None:
        pool = _AsyncPool.from_url(settings.REDIS_URL, **_options())
        client = redis.asyncio.Redis(connection_pool=pool)
        _async_clients[loop] = client
    return client


def reset_clients() -> None:
    """Forget every client (tests that point REDIS_URL elsewhere call this)."""
    global _sync_client
    _sync_client = None
    _async_clients.clear()


WRITE_AGAIN_FIRST_S, WRITE_AGAIN_MAX_S = 0.05, 2.0  # the wait between tries, doubling
WRITE_AGAIN_FOR_S = 60.0  # a command counts as pending for a minute at most: none needs more
WRITE_AGAIN_MAX = 10_000  # kept at most per loop; the oldest go first past it


def write_again_later(writes: Callable) -> None:
    """Make ``writes(pipe)``, idempotent writes that a busy pool or a lost connection kept
    from Redis, again from this event loop (only from one) until they land or a minute has
    passed: dropped, what they keep (a command no longer pending, above all) would stand
    wrong for that long. Every write waiting in a loop goes in one pipeline per try."""
    loop = asyncio.get_running_loop()
    waiting = _waiting.get(loop)
    if waiting is None:
        waiting = _waiting[loop] = _WritesAgain()
    waiting.add(loop, writes)


class _WritesAgain:
    """One loop's writes to make again, and the one task that makes them."""

    def __init__(self) -> None:
        self.writes: list[tuple[float, Callable]] = []  # (when it was given, the writes)
        self.task: asyncio.Task | None = None

    def add(self, loop: asyncio.AbstractEventLoop, writes: Callable) -> None:
        self.writes.append((loop.time(), writes))
        del self.writes[:-WRITE_AGAIN_MAX]
        if self.task is None or self.task.done():
            self.task = loop.create_task(self._drain(loop))

    async def _drain(self, loop: asyncio.AbstractEventLoop) -> None:
        wait_s, failing, dropped = WRITE_AGAIN_FIRST_S, False, 0
        while self.writes:
            await asyncio.sleep(wait_s)
            batch = [w for w in self.writes if loop.time() - w[0] < WRITE_AGAIN_FOR_S]
            dropped += len(self.writes) - len(batch)
            self.writes = []
            try:
                await _write(batch)
            except (RedisConnectionError, RedisTimeoutError):
                self.writes = [*batch, *self.writes][-WRITE_AGAIN_MAX:]
                wait_s = min(2 * wait_s, WRITE_AGAIN_MAX_S)
                if not failing:  # once per outage
                    log.warning("Redis writes made again: %d wait for Redis", len(self.writes))
                failing = True
                continue
            if failing or dropped:
                log.warning(
                    "Redis took the writes made again (%d given up after a minute)", dropped
                )
            wait_s, failing, dropped = WRITE_AGAIN_FIRST_S, False, 0


async def _write(batch: list[tuple[float, Callable]]) -> None:
    pipe = async_redis().pipeline(transaction=False)
    for _, writes in batch:
        writes(pipe)
    # A write Redis refuses would be refused again: the others in the pipeline ran all the same.
    for reply in await pipe.execute(raise_on_error=False):
        if isinstance(reply, RedisError):
            log.error("Redis refused a write made again: %s", reply)


_waiting: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
