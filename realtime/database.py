"""Database calls from an event loop, on more than one thread where the database allows it.

Channels' ``database_sync_to_async`` runs every call of a process on one thread: a command
waiting on PostgreSQL holds up every other match's command in that process, though each takes
only its own match's row lock. ``in_database_threads`` runs calls on a pool of ``DB_THREADS``
threads instead, each with its own persistent connection (closed when stale, as Channels does).
SQLite takes one writer at a time anyway, so there the pool is one thread.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import cache

from channels.db import DatabaseSyncToAsync, database_sync_to_async
from django.conf import settings


@cache
def _pool(size: int) -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=size, thread_name_prefix="database")


def in_database_threads(func):
    """``func`` as a coroutine function run on the database threads."""
    if settings.DB_THREADS <= 1:
        return database_sync_to_async(func)
    return DatabaseSyncToAsync(func, thread_sensitive=False, executor=_pool(settings.DB_THREADS))
