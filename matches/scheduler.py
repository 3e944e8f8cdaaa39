"""Deadlines fire from whichever process is alive.

Every web process that serves a match socket polls the deadline set in Redis every ``POLL_S``
and fires what is due; Celery beat's sweeper does the same every second, as the backstop when no
web process is up. Firing goes through ``services.match_expire``, which takes the match's lock
and is idempotent: two processes firing one deadline change the match once.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import weakref

from channels.db import database_sync_to_async

from config.redis_clients import async_redis

from . import deadlines, services, webbeats
from .models import Match

log = logging.getLogger(__name__)

POLL_S = 0.02  # a forfeit reaches its players within a poll of its deadline, plus the write
BATCH = 200
REBUILD_EVERY = 50  # polls between checks that Redis still holds the deadline set
# In one round trip: the authority's time, this process's beat for the current second
# (matches/webbeats.py), the deadlines due, and whether the deadline set exists.
_POLL = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local second = tonumber(t[1])
redis.call('ZADD', KEYS[2], second, second)
if second % 60 == 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', second - tonumber(ARGV[2]))
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, ARGV[1])
return {now, due, redis.call('EXISTS', KEYS[1])}
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
    """Start this process's deadline loop on the running event loop, once; returns it."""
    loop = asyncio.get_running_loop()
    task = _loops.get(loop)
    if task is None or task.done():
        task = _loops[loop] = loop.create_task(_run())
    return task


async def _run() -> None:
    fire = database_sync_to_async(fire_due)
    rebuild = database_sync_to_async(deadlines.rebuild)
    failing = False
    me = asyncio.current_task()
    for poll in itertools.count():
        if me.cancelling():  # a cancel that a library swallowed still ends the loop
            return
        try:
            now_ms, due, exists = await async_redis().eval(
                _POLL, 2, deadlines.DEADLINES_KEY, webbeats.BEATS_KEY, BATCH, webbeats.KEEP_S
            )
            if not exists and poll % REBUILD_EVERY == 0:
                await rebuild()  # Redis lost it (or no match has a deadline: a cheap query)
            if due:
                await fire(due, int(now_ms))
            if failing:
                log.warning("deadline loop: working again")
            failing = False
        except Exception:
            if not failing:  # once per outage, not once per poll
                log.exception("deadline loop: cannot fire deadlines now (the sweeper will)")
            failing = True
        await asyncio.sleep(POLL_S)
