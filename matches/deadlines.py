"""Deadlines live in the database (``Match.deadline_ms``) and in a Redis sorted set, so the
deadline loops (matches/scheduler.py) find due matches cheaply and Redis can be rebuilt from the
database at any time. One entry per match, moved by each change: no task per deadline."""

from __future__ import annotations

from realtime.redis_clients import sync_redis

from .models import Match

DEADLINES_KEY = "sbo:deadlines"
KEEPER_KEY = "sbo:deadlines:keeper"  # set while a deadline keeper runs (matches/scheduler.py)


def remember(match_id: str, deadline_ms: int | None) -> None:
    """Put the database row's deadline back into Redis (a change writes its own with its seq:
    broadcast.note_change)."""
    if deadline_ms is None:
        sync_redis().zrem(DEADLINES_KEY, match_id)
    else:
        sync_redis().zadd(DEADLINES_KEY, {match_id: deadline_ms})


def due(now_ms: int, limit: int = 500) -> list[str]:
    return sync_redis().zrangebyscore(DEADLINES_KEY, "-inf", now_ms, start=0, num=limit)


def built_key() -> str:
    """Set by a rebuild: gone means Redis lost what it held (the set itself may already hold a
    deadline written since, so its own existence proves nothing)."""
    return f"{DEADLINES_KEY}:built"


def rebuild() -> int:
    """Make the sorted set hold the database's live deadlines: add or update every one, remove
    the others (merging, so a deadline written meanwhile is not wiped)."""
    pairs = {
        str(match_id): ms
        # By status, which leads an index: deadline_ms has none (a move changes it).
        for match_id, ms in Match.objects.filter(
            status__in=[Match.Status.WAITING, Match.Status.LIVE], deadline_ms__isnull=False
        ).values_list("id", "deadline_ms")
    }
    client = sync_redis()
    gone = set(client.zrange(DEADLINES_KEY, 0, -1)) - set(pairs)
    pipe = client.pipeline()
    if pairs:
        pipe.zadd(DEADLINES_KEY, pairs)
    if gone:
        pipe.zrem(DEADLINES_KEY, *gone)
    pipe.set(built_key(), "1")
    pipe.execute()
    return len(pairs)


def rebuild_if_lost() -> bool:
    if sync_redis().exists(built_key()):
        return False
    rebuild()
    return True
