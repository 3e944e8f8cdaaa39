"""Redis writes that must land, made again when the pool was busy.

On an overloaded machine a web process's Redis pool can stay busy past its wait
(``PoolBusy``). A change's after-commit writes and a command's release from the pending set
were then dropped: the pending arrival, never released, held back every forfeit of its match
for a minute (``PENDING_TTL_MS``), and the 1,000-match benchmark saw forfeits made 50-68 s
late. They are idempotent, so they are made again once a connection is free."""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid

import redis
from django.conf import settings

from matches import broadcast, timekeeping
from realtime import redis_clients

TIMEOUT_S = 5.0


async def until(predicate) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + TIMEOUT_S
    while not await predicate():
        assert loop.time() < deadline, "the condition did not come true in time"
        await asyncio.sleep(0.01)


async def test_after_commit_writes_that_found_the_pool_busy_are_made_once_it_is_free(
    tiny_redis_pool,
):
    client = redis_clients.async_redis()
    key = f"sbo:test:written:{uuid.uuid4().hex}"
    held = await client.connection_pool.get_connection()
    try:
        async with broadcast.held():  # as a move's writes are made, from the loop
            broadcast.publish_messages(list, lambda pipe: pipe.set(key, "1", ex=60))
        assert redis_clients.sync_redis().exists(key) == 0  # the pool was busy: not yet
    finally:
        await client.connection_pool.release(held)
    await until(lambda: _exists(key))
    redis_clients.sync_redis().delete(key)


async def test_a_release_that_found_the_pool_busy_is_made_once_it_is_free(tiny_redis_pool):
    match_id = str(uuid.uuid4())
    arrival = await timekeeping.stamp_arrival(match_id)
    pending = timekeeping.ARRIVALS_KEY.format(match_id=match_id)
    client = redis_clients.async_redis()
    held = await client.connection_pool.get_connection()
    try:
        await timekeeping.release_arrival(arrival)
        assert redis_clients.sync_redis().zscore(pending, arrival.token) is not None
    finally:
        await client.connection_pool.release(held)
    await until(lambda: _released(pending, arrival.token))


def test_the_computers_release_that_found_the_pool_busy_is_made_once_it_is_free(
    tiny_redis_pool,
):
    """The computer's command is made on a worker, with no event loop to make its release again
    later: it tries again itself, for a few seconds."""
    match_id = str(uuid.uuid4())
    arrival = timekeeping.stamp_arrival_sync(match_id)
    pending = timekeeping.ARRIVALS_KEY.format(match_id=match_id)
    aside = redis.Redis.from_url(settings.REDIS_URL)  # not the busy pool's
    pool = redis_clients.sync_redis().connection_pool
    held = pool.get_connection()
    releasing = threading.Thread(target=timekeeping.release_arrival_sync, args=(arrival,))
    failed_once = threading.Event()
    watcher = _OnRecord(failed_once, "could not release")
    logger = logging.getLogger("matches.timekeeping")
    logger.addHandler(watcher)
    try:
        try:
            releasing.start()
            assert failed_once.wait(TIMEOUT_S), "the release did not find the pool busy"
            assert aside.zscore(pending, arrival.token) is not None  # not released yet
        finally:
            pool.release(held)
        releasing.join(TIMEOUT_S)
    finally:
        logger.removeHandler(watcher)
    assert not releasing.is_alive()
    assert aside.zscore(pending, arrival.token) is None
    assert not watcher.errors  # not left pending


class _OnRecord(logging.Handler):
    """Sets ``seen`` when a record with ``text`` is logged; keeps the errors logged."""

    def __init__(self, seen: threading.Event, text: str):
        super().__init__(logging.WARNING)
        self.seen, self.text, self.errors = seen, text, []

    def emit(self, record: logging.LogRecord) -> None:
        if record.levelno >= logging.ERROR:
            self.errors.append(record)
        if self.text in record.getMessage():
            self.seen.set()


async def _exists(key: str) -> bool:
    return redis_clients.sync_redis().exists(key) == 1


async def _released(pending: str, token: str) -> bool:
    return redis_clients.sync_redis().zscore(pending, token) is None


async def test_a_write_made_again_that_redis_refuses_is_let_go_and_the_rest_land(tiny_redis_pool):
    """Made again together, in one pipeline: one that Redis refuses (it would refuse it again)
    is not tried again, and the others land."""
    client = redis_clients.async_redis()
    text, key = f"sbo:test:text:{uuid.uuid4().hex}", f"sbo:test:written:{uuid.uuid4().hex}"
    redis_clients.sync_redis().set(text, "not a number", ex=60)
    held = await client.connection_pool.get_connection()
    try:
        async with broadcast.held():
            broadcast.publish_messages(list, lambda pipe: pipe.incr(text))
            broadcast.publish_messages(list, lambda pipe: pipe.set(key, "1", ex=60))
    finally:
        await client.connection_pool.release(held)
    await until(lambda: _exists(key))
    assert redis_clients.sync_redis().get(text) == "not a number"
    redis_clients.sync_redis().delete(key, text)
