"""Deadlines live in the database (``Match.deadline_ms``) and in a Redis sorted set, so the
sweeper finds due matches cheaply and Redis can be rebuilt from the database at any time.
Each deadline also gets a Celery task with that ETA; the beat sweeper catches lost tasks."""

from __future__ import annotations

from datetime import UTC, datetime

from config.redis_clients import sync_redis

DEADLINES_KEY = "sbo:deadlines"


def arm(match_id: str, seq: int, deadline_ms: int | None) -> None:
    """Keep Redis in step with the database row and schedule the timeout task (after commit)."""
    remember(match_id, deadline_ms)
    if deadline_ms is not None:
        schedule(match_id, seq, deadline_ms)


def remember(match_id: str, deadline_ms: int | None) -> None:
    if deadline_ms is None:
        sync_redis().zrem(DEADLINES_KEY, match_id)
    else:
        sync_redis().zadd(DEADLINES_KEY, {match_id: deadline_ms})


def schedule(match_id: str, seq: int, deadline_ms: int) -> None:
    from .tasks import expire_match

    eta = datetime.fromtimestamp(deadline_ms / 1000, UTC)
    # Short expiry: a task that missed its moment is redundant, the sweeper covers it.
    expire_match.apply_async((match_id, seq), eta=eta, expires=600)


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
