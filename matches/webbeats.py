"""Was the web tier up? Every second in which some web process could receive and stamp commands.

Each web process's deadline loop adds the current second of the time authority to a Redis sorted
set on every poll (in the same round trip). A player whose clock ran through a stretch of seconds
with no beat could not be heard: by RULES §7 that is a timing fault of the service, and the match
is voided instead of forfeited. Beats are kept a day.
"""

from __future__ import annotations

from config.redis_clients import sync_redis

from . import timekeeping

BEATS_KEY = "sbo:web:beats"
KEEP_S = 24 * 3600

UP, DOWN_NOW, GAP, UNKNOWN = "up", "down_now", "gap", "unknown"


def tolerance_s() -> int:
    """Seconds without a beat that still count as up (a restart of one process, a slow poll)."""
    return max(1, timekeeping.setting_ms("WEB_GAP_TOLERANCE_MS", 3_000) // 1000)


def verdict(start_ms: int, end_ms: int, now_ms: int) -> str:
    """What the beats say of the stretch from ``start_ms`` to ``end_ms`` (a running clock), seen
    at ``now_ms``: ``up``; ``down_now`` (no web process is up: nobody can act yet); ``gap`` (an
    outage longer than the tolerance overlapped it, even if it began just before the deadline
    and lasted past it); or ``unknown`` (no beats: Redis lost them, or no web process ever ran,
    as in a worker-only job). Before the first beat seen nothing is judged."""
    start_s, end_s, now_s = start_ms // 1000, end_ms // 1000, now_ms // 1000
    tolerance = tolerance_s()
    beats = [
        int(second)
        for second in sync_redis().zrangebyscore(BEATS_KEY, start_s - tolerance - 1, now_s)
    ]
    if not beats:
        return UNKNOWN
    if beats[-1] < now_s - tolerance:
        return DOWN_NOW
    for earlier, later in zip(beats, beats[1:], strict=False):
        if later - earlier - 1 > tolerance and earlier < end_s and later > start_s:
            return GAP
    return UP
