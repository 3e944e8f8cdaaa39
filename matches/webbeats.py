"""Was the web tier up? Every second in which some web process could receive and stamp commands.

Each web process's deadline loop adds the current second of the time authority to a Redis sorted
set on every poll (in the same round trip). A player whose clock ran through a stretch of seconds
with no beat could not be heard: by RULES §7 that is a timing fault of the service, and the match
is voided instead of forfeited. Beats are kept a day.

A web process also remembers its own unbroken run of beats: a clock that ran wholly within it
needs no question to Redis (the process itself was up all along), which spares the round trip
on every long turn and every forfeit this process judges. A failed beat ends the run, and so
does a beat that finds the process's previous beat gone from Redis (a restart between two
beats, a flush, a failover to a replica behind): what Redis lost counts as its outage, for
this process as for any other that asks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from realtime.redis_clients import sync_redis

from . import timekeeping

BEATS_KEY = "sbo:web:beats"
KEEP_S = 24 * 3600
# A web process's beat: the authority's current second (trimming a day's worth once a minute),
# and whether the process's previous beat (ARGV[2], or '' for none) is still there.
BEAT = """
local second = tonumber(redis.call('TIME')[1])
local kept = ARGV[2] == '' or redis.call('ZSCORE', KEYS[1], ARGV[2]) ~= false
redis.call('ZADD', KEYS[1], second, second)
if second % 60 == 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', second - tonumber(ARGV[1]))
end
return {second, kept and 1 or 0}
"""

UP, DOWN_NOW, GAP, UNKNOWN = "up", "down_now", "gap", "unknown"


def tolerance_s() -> int:
    """Seconds without a beat that still count as up (a restart of one process, a slow poll)."""
    return max(1, timekeeping.setting_ms("WEB_GAP_TOLERANCE_MS", 3_000) // 1000)


@dataclass(frozen=True)
class _Run:
    key: str
    first_s: int
    last_s: int


_own_run: _Run | None = None  # this process's unbroken beats, in the authority's seconds


def _current_run() -> _Run | None:
    """This process's run, if it was beaten under the key in use (tests give each their own)."""
    run = _own_run
    return run if run is not None and run.key == BEATS_KEY else None


def previous_beat() -> str:
    """This process's last beat, for BEAT to look for ('' if none)."""
    run = _current_run()
    return "" if run is None else str(run.last_s)


def note_beat(second: int | None, *, previous_kept: bool = True) -> None:
    """This process beat at ``second`` (None: a beat failed, and the run is over);
    ``previous_kept``: Redis still held the beat before it."""
    global _own_run
    run = _current_run()
    if second is None:
        _own_run = None
    elif run is None or not previous_kept or _broken(run.last_s, second, tolerance_s()):
        _own_run = _Run(BEATS_KEY, second, second)
    else:
        _own_run = _Run(BEATS_KEY, run.first_s, max(run.last_s, second))


def up_here_throughout(start_ms: int, now_ms: int) -> bool:
    """Did this process beat without a break from ``start_ms`` to ``now_ms``? Then the web
    tier was up all along, known without asking Redis."""
    return _own_run_covers(start_ms // 1000, now_ms // 1000)


def _own_run_covers(start_s: int, now_s: int) -> bool:
    run = _current_run()
    return run is not None and run.first_s <= start_s and run.last_s >= now_s - 1


def _broken(earlier_s: int, later_s: int, tolerance: int) -> bool:
    """Is the silence between two beats an outage?"""
    return later_s - earlier_s - 1 > tolerance


def down_now(now_ms: int) -> bool:
    """No web process beat in the last second, though some did before: nobody can act now."""
    latest = sync_redis().zrevrangebyscore(BEATS_KEY, "+inf", "-inf", start=0, num=1)
    return bool(latest) and int(latest[0]) < now_ms // 1000 - 1


def verdict(start_ms: int, end_ms: int, now_ms: int) -> str:
    """What the beats say of a clock that ran from ``start_ms`` to ``end_ms``, seen at ``now_ms``:

    - ``down_now``: no web process beat in the last second: nobody can act yet, judge later;
    - ``gap``: an outage longer than the tolerance overlapped the clock (even one that began
      before the clock started, or just before the deadline and lasted past it), or the beats
      from before the clock started are gone (Redis lost them: its own outage);
    - ``unknown``: no web process has ever beaten (a worker-only job, or the first moments of a
      new deployment);
    - ``up`` otherwise.
    """
    pipe = sync_redis().pipeline(transaction=False)  # one round trip: a slow move asks this
    judge = query_verdict(pipe, start_ms, end_ms, now_ms)
    return judge(pipe.execute())


def query_verdict(pipe, start_ms: int, end_ms: int, now_ms: int) -> Callable[[list], str]:
    """Queue into ``pipe`` what ``verdict`` asks Redis (nothing where this process's own run
    answers); returns how to tell the verdict from the replies from there on."""
    start_s, end_s, now_s = start_ms // 1000, end_ms // 1000, now_ms // 1000
    if _own_run_covers(start_s, now_s):
        return lambda replies: UP
    pipe.zrevrangebyscore(BEATS_KEY, start_s, "-inf", start=0, num=1)
    pipe.zrangebyscore(BEATS_KEY, f"({start_s}", now_s)
    return partial(_verdict_of, start_s=start_s, end_s=end_s, now_s=now_s)


def _verdict_of(replies: list, *, start_s: int, end_s: int, now_s: int) -> str:
    before, since = replies[:2]
    anchor = [int(s) for s in before]
    beats = anchor + [int(s) for s in since]
    if not beats:
        return UNKNOWN
    if beats[-1] < now_s - 1:
        return DOWN_NOW
    tolerance = tolerance_s()
    if not anchor and beats[0] - start_s > tolerance:
        return GAP
    for earlier, later in zip(beats, beats[1:], strict=False):
        if _broken(earlier, later, tolerance) and earlier < end_s and later > start_s:
            return GAP
    return UP
