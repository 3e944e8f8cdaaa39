"""Deadlines fire from whichever process is alive.

Every web process fires due deadlines: it polls the deadline set in Redis every ``POLL_S``;
Celery beat's sweeper does the same every second, as the backstop when no web process is up.
Firing goes through ``services.match_expire``, which takes the match's lock and is idempotent:
two processes firing one deadline change the match once. Each web process also beats for the
web tier (matches/webbeats.py) from a loop of its own, so a backlog of deadlines (which waits
for the database) never looks like an outage.
"""

from __future__ import annotations

import asyncio
import logging
import weakref

from channels.db import database_sync_to_async

from realtime import presence
from realtime.database import in_database_threads
from realtime.redis_clients import async_redis

from . import broadcast, deadlines, services, webbeats
from .models import Match

log = logging.getLogger(__name__)

POLL_S = 0.02  # a forfeit reaches its players within a poll of its deadline, plus the write
BEAT_S = 0.25  # several beats a second: a beat missed now and then is no outage
BATCH = 200
REBUILD_CHECK_S = 1.0  # how often a web process checks that Redis still holds the deadlines
# The authority's time and the deadlines due by it, in one round trip.
_DUE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return {now, redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, ARGV[1])}
"""

_loops: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def fire_due(match_ids, now_ms: int) -> int:
    """Act on each match whose deadline has passed at ``now_ms``; returns how many changed."""
    acted = 0
    for match_id in match_ids:
        try:
            outcome = services.match_expire(match_id=match_id, now_ms=now_ms)
        except services.CommandRejected:  # no such match (deleted): forget its deadline
            outcome = "nothing_due"
        if outcome in ("nothing_due", "early"):
            # Redis was behind the database (or another process fired it first): the
            # database wins.
            deadline_ms = (
                Match.objects.filter(pk=match_id).values_list("deadline_ms", flat=True).first()
            )
            deadlines.remember(match_id, deadline_ms)
        elif outcome not in ("command_pending", "web_down"):
            acted += 1  # (a command stamped in time goes first; nobody can act while web is down)
    return acted


def ensure_running() -> asyncio.Task:
    """Start this process's loops (beat, fire deadlines) on the running event loop, once;
    returns the task that runs them."""
    loop = asyncio.get_running_loop()
    task = _loops.get(loop)
    if task is None or task.done():
        task = _loops[loop] = loop.create_task(_run())
    return task


async def _run() -> None:
    beating = asyncio.ensure_future(_every(BEAT_S, _beat, "beat for the web tier"))
    marking = asyncio.ensure_future(
        _every(presence.REFRESH_S, presence.refresh_all, "mark this process's sockets open")
    )
    try:
        await _every(POLL_S, _deadline_poller(), "fire deadlines (the sweeper will)")
    finally:
        beating.cancel()
        marking.cancel()


async def _every(period_s: float, step, what: str) -> None:
    """Run ``step`` every ``period_s`` until cancelled, logging a failure once per outage."""
    me = asyncio.current_task()
    failing = False
    while not me.cancelling():  # a cancel that a library swallowed still ends the loop
        try:
            await step()
            if failing:
                log.warning("cannot %s: working again", what)
            failing = False
        except Exception:
            if not failing:
                log.exception("cannot %s now", what)
            failing = True
        await asyncio.sleep(period_s)


async def _beat() -> None:
    await async_redis().eval(webbeats.BEAT, 1, webbeats.BEATS_KEY, webbeats.KEEP_S)


def _deadline_poller():
    """One poll: rebuild the deadline set if Redis lost it (checked every REBUILD_CHECK_S),
    then fire what is due."""
    rebuild_if_lost = database_sync_to_async(deadlines.rebuild_if_lost)
    checked_at = [float("-inf")]

    async def fire(match_id: str, now_ms: int) -> None:
        # One call per match, side by side on the database threads; each sends its own
        # broadcasts as soon as it is done, not after the whole batch.
        async with broadcast.held():
            await in_database_threads(fire_due)([match_id], now_ms)

    async def poll() -> None:
        clock = asyncio.get_running_loop().time()
        if clock - checked_at[0] >= REBUILD_CHECK_S:
            checked_at[0] = clock
            await rebuild_if_lost()
        now_ms, due = await async_redis().eval(_DUE, 1, deadlines.DEADLINES_KEY, BATCH)
        if due:
            await asyncio.gather(*(fire(match_id, int(now_ms)) for match_id in due))

    return poll
