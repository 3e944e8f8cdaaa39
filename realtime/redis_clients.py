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


WRITE_AGAIN_AFTER_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4)  # about 13 s in all
_writing_again: set[asyncio.Task] = set()  # the loop keeps only weak references to its tasks


def write_again_later(writes: Callable, what: str) -> None:
    """Make ``writes(pipe)``, idempotent writes that a busy pool or a lost connection kept
    from Redis, again from this loop, a little later each time until they land: dropped, what
    they keep (a command no longer pending, above all) would stand wrong until it expires."""
    task = asyncio.ensure_future(_write_again(writes, what))
    _writing_again.add(task)
    task.add_done_callback(_writing_again.discard)


async def _write_again(writes: Callable, what: str) -> None:
    for wait_s in WRITE_AGAIN_AFTER_S:
        await asyncio.sleep(wait_s)
        try:
            pipe = async_redis().pipeline(transaction=False)
            writes(pipe)
            await pipe.execute()
            return
        except RedisError:
            continue
    log.error("could not %s after %d tries: it expires by itself", what, len(WRITE_AGAIN_AFTER_S))
