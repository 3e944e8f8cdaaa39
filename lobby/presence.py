"""Which lobby sockets each user has open, in Redis, so every Daphne process agrees: when a
user's last lobby socket closes, their seek and queue place go (services.lobby_leave).

Each socket is a member of a sorted set scored by when it was last heard from (lobby.js pings
every 25 s). A socket silent for ``STALE_MS`` (its process died without a disconnect) no
longer counts, so a crash cannot keep a seek open for ever.
"""

from __future__ import annotations

from matches.redis_clients import async_redis

SOCKETS_KEY = "sbo:lobby:sockets:{user_id}"
STALE_MS = 90_000
TTL_S = 24 * 3600


async def seen(user_id: int, channel_name: str, now_ms: int) -> None:
    """The socket is open at ``now_ms`` (wall-clock milliseconds): on connect and every message."""
    key = SOCKETS_KEY.format(user_id=user_id)
    client = async_redis()
    await client.zadd(key, {channel_name: now_ms})
    await client.expire(key, TTL_S)


async def left(user_id: int, channel_name: str, now_ms: int) -> int:
    """Remove the socket; returns how many of the user's lobby sockets are still open."""
    key = SOCKETS_KEY.format(user_id=user_id)
    client = async_redis()
    await client.zrem(key, channel_name)
    await client.zremrangebyscore(key, "-inf", now_ms - STALE_MS)
    return int(await client.zcard(key))
