"""Who is connected to a match, per seat, kept in Redis so every Daphne process agrees. A
player whose clock runs out while nobody holds their seat has abandoned the match."""

from __future__ import annotations

from .redis_clients import async_redis, sync_redis

PRESENCE_KEY = "sbo:presence:{match_id}"
PRESENCE_TTL_S = 24 * 3600


async def joined(match_id: str, seat: int) -> None:
    key = PRESENCE_KEY.format(match_id=match_id)
    client = async_redis()
    await client.hincrby(key, str(seat), 1)
    await client.expire(key, PRESENCE_TTL_S)


async def left(match_id: str, seat: int) -> None:
    await async_redis().hincrby(PRESENCE_KEY.format(match_id=match_id), str(seat), -1)


def is_connected(match_id: str, seat: int) -> bool:
    count = sync_redis().hget(PRESENCE_KEY.format(match_id=match_id), str(seat))
    return int(count or 0) > 0
