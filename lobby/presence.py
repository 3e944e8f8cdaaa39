"""Which lobby sockets each user has open, in Redis, so every Daphne process agrees: when a
user's last lobby socket closes, their seek and queue place go (services.lobby_leave)."""

from __future__ import annotations

from matches.redis_clients import async_redis

SOCKETS_KEY = "sbo:lobby:sockets:{user_id}"
TTL_S = 24 * 3600


async def joined(user_id: int, channel_name: str) -> None:
    key = SOCKETS_KEY.format(user_id=user_id)
    client = async_redis()
    await client.sadd(key, channel_name)
    await client.expire(key, TTL_S)


async def left(user_id: int, channel_name: str) -> int:
    """Remove the socket; returns how many of the user's lobby sockets remain open."""
    key = SOCKETS_KEY.format(user_id=user_id)
    client = async_redis()
    await client.srem(key, channel_name)
    return int(await client.scard(key))
