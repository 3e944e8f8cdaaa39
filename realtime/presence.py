"""Which WebSocket connections are open, in Redis, so every Daphne process agrees.

Each subject (a user in the lobby, a seat in a match) has a sorted set of its sockets' channel
names scored by when each was last heard from (wall-clock ms; clients ping every few seconds).
A socket silent for ``stale_ms`` (its process died without a disconnect) no longer counts, so a
crash can neither keep a seek open for ever nor make an absent player look connected.
"""

from __future__ import annotations

import time

from realtime.redis_clients import async_redis, sync_redis


def wall_ms() -> int:
    return int(time.time() * 1000)


class SocketPresence:
    def __init__(self, key_pattern: str, *, stale_ms: int = 90_000, ttl_s: int = 24 * 3600):
        self.key_pattern = key_pattern
        self.stale_ms = stale_ms
        self.ttl_s = ttl_s

    def key(self, subject) -> str:
        return self.key_pattern.format(subject)

    async def seen(self, subject, channel_name: str, now_ms: int) -> None:
        """The socket is open at ``now_ms``: on connect and on every message."""
        key = self.key(subject)
        client = async_redis()
        await client.zadd(key, {channel_name: now_ms})
        await client.expire(key, self.ttl_s)

    async def left(self, subject, channel_name: str, now_ms: int) -> int:
        """Remove the socket; returns how many of the subject's sockets are still open."""
        key = self.key(subject)
        client = async_redis()
        await client.zrem(key, channel_name)
        await client.zremrangebyscore(key, "-inf", now_ms - self.stale_ms)
        return int(await client.zcard(key))

    def count(self, subject, now_ms: int) -> int:
        """How many of the subject's sockets were heard from lately."""
        return int(sync_redis().zcount(self.key(subject), now_ms - self.stale_ms, "+inf"))
