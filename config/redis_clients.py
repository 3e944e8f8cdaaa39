"""Redis connections for the match service: one sync client per process, one asyncio client per
event loop (an asyncio client cannot outlive the loop it was made on)."""

from __future__ import annotations

import asyncio
import weakref

import redis
import redis.asyncio
from django.conf import settings

_sync_client: redis.Redis | None = None
_async_clients: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _options() -> dict:
    timeout = getattr(settings, "REDIS_SOCKET_TIMEOUT_S", 1.0)
    return {"socket_timeout": timeout, "socket_connect_timeout": timeout, "decode_responses": True}


def sync_redis() -> redis.Redis:
    global _sync_client
    if _sync_client is None:
        _sync_client = redis.Redis.from_url(settings.REDIS_URL, **_options())
    return _sync_client


def async_redis() -> redis.asyncio.Redis:
    loop = asyncio.get_running_loop()
    client = _async_clients.get(loop)
    if client is None:
        client = redis.asyncio.Redis.from_url(settings.REDIS_URL, **_options())
        _async_clients[loop] = client
    return client


def reset_clients() -> None:
    """Forget every client (tests that point REDIS_URL elsewhere call this)."""
    global _sync_client
    _sync_client = None
    _async_clients.clear()
