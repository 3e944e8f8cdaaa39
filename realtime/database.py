"""Database calls from an event loop, on more than one thread where the database allows it.

Channels' ``database_sync_to_async`` runs every call of a process on one thread: a command
waiting on PostgreSQL holds up every other match's command in that process, though each takes
only its own match's row lock. ``in_database_threads`` runs calls on a pool of ``DB_THREADS``
threads instead, each with its own persistent connection (closed when stale, as Channels does).
SQLite takes one writer at a time anyway, so there the pool is one thread.

Django checks a persistent connection with a ``SELECT 1`` before each call uses it: a round
trip for every command. A connection that finished a call cleanly within the last
``HEALTH_TRUSTED_S`` and has nothing waiting on its socket is trusted without it. An idle
connection is sent nothing, so a readable socket means the server said goodbye (a restart, a
terminated backend) or, through TCP keepalives, that it vanished without one (a network cut, a
host down: config/env.py has the kernel notice within the spell): that one is checked, and
replaced, before the call uses it. One that died silently more recently fails its next call
(the socket answers ``unavailable`` and the client sends the command again; nothing was
written) and is replaced, as Django replaces any connection that raised. The spell is long
enough for a human pace: a process's few moves a second spread over its threads, so each
connection waits seconds between calls.

A player's move read without its lock (matches/services.py) is written from the event loop itself,
on one of a few connections that loop keeps (``lease_loop_connection``): at a human pace each hop
between threads costs a sleeping thread's wake-up, and a move made on a database thread took
three (to the thread, to the stamp it waits for, back to the loop).

HTTP requests are the other way in. Under ASGI, Django runs each request's sync code on a thread
made for that request alone, so a connection kept open for reuse there is never reused: it
outlives its thread, unreachable, until a full collection happens to find it (a load balancer's
health checks alone left a PostgreSQL backend open every second). ``close_request_connections``
closes them as each request finishes.
"""

from __future__ import annotations

import asyncio
import weakref
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from select import POLLIN, poll
from time import monotonic

import psycopg
from asgiref.sync import SyncToAsync
from django.conf import settings
from django.db import close_old_connections, connections

HEALTH_TRUSTED_S = 30.0


@cache
def _pool(size: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=size, thread_name_prefix="database")


class _DatabaseCall(SyncToAsync):
    """Channels' ``DatabaseSyncToAsync``, trusting a connection that has just worked."""

    def thread_handler(self, loop, *args, **kwargs):
        close_old_connections()
        _trust_recently_clean_connections()
        try:
            return super().thread_handler(loop, *args, **kwargs)
        finally:
            _note_clean_connections()
            close_old_connections()


def _trust_recently_clean_connections() -> None:
    now = monotonic()
    for db in connections.all(initialized_only=True):
        clean_at = getattr(db, "clean_at", None)
        recently_clean = clean_at is not None and now - clean_at < HEALTH_TRUSTED_S
        if db.connection is not None and recently_clean and _nothing_to_read(db.connection):
            db.health_check_done = True


def _nothing_to_read(connection) -> bool:
    """True for a connection without a socket (SQLite) or whose socket is quiet."""
    fileno = getattr(connection, "fileno", None)
    if fileno is None:
        return True
    try:
        quiet = poll()  # not select(): a busy web process's descriptors pass 1024
        quiet.register(fileno(), POLLIN)
        return not quiet.poll(0)
    except Exception:  # a closed connection or socket: let Django's check find out
        return False


def _note_clean_connections() -> None:
    now = monotonic()
    for db in connections.all(initialized_only=True):
        if db.connection is not None and not db.errors_occurred:
            db.clean_at = now


def in_database_threads(func):
    """``func`` as a coroutine function run on the database threads."""
    if settings.DB_THREADS <= 1:
        return _DatabaseCall(func, thread_sensitive=True)
    return _DatabaseCall(func, thread_sensitive=False, executor=_pool(settings.DB_THREADS))


def close_request_connections(**kwargs) -> None:
    """On ``request_finished`` from the ASGI handler, on the request's own thread: close its
    connections (none is in a transaction once the response is done)."""
    for db in connections.all(initialized_only=True):
        if not db.in_atomic_block:
            db.close()


# --- the event loop's own connections ------------------------------------------------------------


class LoopConnectionUnavailable(Exception):
    """No connection of the event loop could be made: nothing was sent, and the caller goes the
    way of the threads."""


class _LoopConnections:
    """At most ``size`` PostgreSQL connections of one event loop, in autocommit, opened when
    first needed and kept. A caller never waits for one: it leases one before it does any
    work (``lease``), and when all are leased it is told so at once and goes the way of the
    threads. A lease lasts until the loop comes back to the coroutine that awaits its reply,
    so a busy loop holds each longer; waiting for one then would queue moves behind the
    loop's own lag (at 1,000 matches, a wait of up to 2 s made moves time out into the
    threads, doing their work twice). Not psycopg_pool's AsyncConnectionPool: that one fills
    itself from worker tasks of its own, which would outlive the short loops of tests, and
    checks connections with a round trip; here a kept connection is checked as the threads'
    are, by a look at its socket, and one that failed in use is closed, never handed out
    again."""

    def __init__(self, size: int):
        self.idle: list[psycopg.AsyncConnection] = []
        self.size = size
        self.leased = 0

    def lease(self) -> LoopConnectionLease | None:
        if self.leased >= self.size:
            return None
        self.leased += 1
        return LoopConnectionLease(self)

    async def take(self) -> psycopg.AsyncConnection:
        while self.idle:
            db = self.idle.pop()
            if not db.closed and _nothing_to_read(db):
                return db
            await db.close()  # the server said goodbye meanwhile
        try:
            return await _connect()
        except psycopg.Error as exc:
            raise LoopConnectionUnavailable(f"no connection could be made: {exc}") from exc

    async def close(self) -> None:
        idle, self.idle = self.idle, []
        for db in idle:
            await db.close()


class LoopConnectionLease:
    """The right to one of the loop's connections, taken without waiting: ``async with lease
    as db`` for one call (raises ``LoopConnectionUnavailable`` if no connection can be made),
    or ``release()`` if it is not used. Either frees it, once."""

    def __init__(self, pool: _LoopConnections):
        self._pool = pool
        self._db: psycopg.AsyncConnection | None = None
        self._held = True

    async def __aenter__(self) -> psycopg.AsyncConnection:
        try:
            self._db = await self._pool.take()
        except BaseException:
            self.release()
            raise
        return self._db

    async def __aexit__(self, kind, error, traceback) -> None:
        db, self._db = self._db, None
        try:
            if error is None:
                self._pool.idle.append(db)
            else:
                await db.close()  # failed in use: never handed out again
        finally:
            self.release()

    def release(self) -> None:
        if self._held:
            self._held = False
            self._pool.leased -= 1


async def _connect() -> psycopg.AsyncConnection:
    """A connection set up as Django sets up its own (same server, options and adapters)."""
    django_db = connections["default"]
    params = django_db.get_connection_params()
    params.pop("cursor_factory", None)  # Django's are for its sync connections
    params["options"] = f"{params.get('options', '')} -c TimeZone={django_db.timezone_name}"
    return await psycopg.AsyncConnection.connect(**params, autocommit=True)


_loop_connections: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def lease_loop_connection() -> LoopConnectionLease | None:
    """A lease on one of this event loop's PostgreSQL connections (in autocommit), or None at
    once if every one is leased."""
    loop = asyncio.get_running_loop()
    kept = _loop_connections.get(loop)
    if kept is None:
        kept = _loop_connections[loop] = _LoopConnections(settings.LOOP_DB_CONNECTIONS)
    return kept.lease()


async def close_loop_connections() -> None:
    """Close this event loop's kept connections (a test's loop, before it ends)."""
    kept = _loop_connections.pop(asyncio.get_running_loop(), None)
    if kept is not None:
        await kept.close()
