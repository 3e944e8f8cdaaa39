"""Deadlines live in the database (``Match.deadline_ms``) and in a Redis sorted set, so the
deadline loops (matches/scheduler.py) find due matches cheaply and Redis can be rebuilt from the
database at any time. One entry per match, moved by each change: no task per deadline."""

from __future__ import annotations

from config.redis_clients import sync_redis

DEADLINES_KEY = "sbo:deadlines"


def remember(match_id: str, deadline_ms: int | None) -> None:
    """Keep Redis in step with the database row (after commit)."""
    if deadline_ms is None:
        sync_redis().zrem(DEADLINES_KEY, match_id)
    else:
        sync_redis().zadd(DEADLINES_KEY, {match_id: deadline_ms})


def due(now_ms: int, limit: int = 500) -> list[str]:
    return sync_redis().zrangebyscore(DEADLINES_KEY, "-inf", now_ms, start=0, num=limit)


def rebuild() -> int:
    """Refill the sorted set from the database (after Redis lost it)."""
    from .models import Match

    pairs = dict(
        Match.objects.filter(deadline_ms__isnull=False)
        .exclude(status__in=[Match.Status.FINISHED, Match.Status.VOID])
        .values_list("id", "deadline_ms")
    )
    client = sync_redis()
    pipe = client.pipeline()
    pipe.delete(DEADLINES_KEY)
    if pairs:
        pipe.zadd(DEADLINES_KEY, {str(match_id): ms for match_id, ms in pairs.items()})
    pipe.execute()
    return len(pairs)


def is_missing() -> bool:
    return not sync_redis().exists(DEADLINES_KEY)
