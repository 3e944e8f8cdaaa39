"""Which WebSocket connections are open, in Redis, so every Daphne process agrees.

Each subject (a user in the lobby, a seat in a match) has a sorted set of its sockets' channel
names scored by when each was last marked open (wall-clock ms). Each process marks its own open
sockets on a timer (``refresh_all``, every ``REFRESH_S``), not on every message; a socket not
marked for ``stale_ms`` (its process died without a disconnect) no longer counts, so a crash can
neither keep a seek open for ever nor make an absent player look connected.
"""

from __future__ import annotations

import time
from typing import ClassVar

from realtime.redis_clients import async_redis

REFRESH_S = 15.0  # well inside the 90 s after which a socket no longer counts


def wall_ms() -> int:
    return int(time.time() * 1000)


class SocketPresence:
    every: ClassVar[list[SocketPresence]] = []  # refreshed together, in one round trip

    def __init__(self, key_pattern: str, *, stale_ms: int = 90_000, ttl_s: int = 24 * 3600):
        self.key_pattern = key_pattern
        self.stale_ms = stale_ms
        self.ttl_s = ttl_s
        self.open_here: set[tuple[str, str]] = set()  # (key, channel name) of this process
        SocketPresence.every.append(self)

    def key(self, subject) -> str:
        return self.key_pattern.format(subject)

    async def seen(self, subject, channel_name: str, now_ms: int) -> None:
        """The socket opened at ``now_ms``; from now on this process marks it on its timer."""
        key = self.key(subject)
        self.open_here.add((key, channel_name))
        pipe = async_redis().pipeline(transaction=False)
        self.mark(pipe, key, channel_name, now_ms)
        await pipe.execute()

    async def left(self, subject, channel_name: str, now_ms: int) -> int:
        """Remove the socket; returns how many of the subject's sockets are still open."""
        key = self.key(subject)
        self.open_here.discard((key, channel_name))
        pipe = async_redis().pipeline(transaction=False)
        pipe.zrem(key, channel_name)
        pipe.zremrangebyscore(key, "-inf", now_ms - self.stale_ms)
        pipe.zcard(key)
        return int((await pipe.execute())[-1])

    def query_count(self, redis, subject, now_ms: int):
        """How many of the subject's sockets were marked open lately, asked of ``redis``: a
        client (the answer) or a pipeline (queued with the rest of a round trip)."""
        return redis.zcount(self.key(subject), now_ms - self.stale_ms, "+inf")

    def mark(self, pipe, key: str, channel_name: str, now_ms: int) -> None:
        pipe.zadd(key, {channel_name: now_ms})
        pipe.expire(key, self.ttl_s)


async def refresh_all(now_ms: int | None = None) -> int:
    """Mark every socket open in this process as open now, in one round trip; how many."""
    now_ms = wall_ms() if now_ms is None else now_ms
    sockets = [
        (presence, key, channel)
        for presence in SocketPresence.every
        for key, channel in list(presence.open_here)
    ]
    if sockets:
        pipe = async_redis().pipeline(transaction=False)
        for presence, key, channel in sockets:
            presence.mark(pipe, key, channel, now_ms)
        await pipe.execute()
    return len(sockets)
