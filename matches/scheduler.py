"""Deadlines fire from whichever process is alive.

The deadline keeper (``manage.py keep_deadlines``), a process that does nothing else, fires
each deadline the moment it falls due: its loop is never busy with sockets, so nothing delays
it. A running clock's forfeit, which it makes ahead, it fires by a timer of its own at the
deadline, claimed and judged in one round trip (``_fire_at_deadline``); its poll does not wake
for that deadline too.
Every web process fires them too: it polls the deadline set in Redis every ``POLL_S``, or
at the next deadline when that comes sooner, and while a keeper is alive it leaves each
deadline to it for ``WEB_DEADLINE_GRACE_MS`` first. Celery beat's sweeper does the same every
second, as the backstop when no other process is up. A poll claims what it takes (its entries
move ``CLAIM_MS`` ahead), so the processes, all woken at the same deadline, do not all fire it;
a claimer that dies leaves its claims to the others once ``CLAIM_MS`` has passed.
Firing goes through ``services.match_expire`` (or, for the keeper's forfeits made ahead,
``services.forfeit_made_ahead`` and ``write_forfeit_ahead``), which is idempotent: two
processes firing one deadline change the match once. A forfeit is told first and concluded
after (``services.match_conclude``). Each web process also beats for the web tier
(matches/webbeats.py) from a loop of its own, so a backlog of deadlines (which waits for the
database) never looks like an outage, and reads what answers its pings and says which matches
have spectators (matches/readings.py).
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections.abc import Coroutine
from functools import partial
from typing import NamedTuple

from channels.db import database_sync_to_async
from django.conf import settings

from realtime import presence
from realtime.database import in_database_threads
from realtime.redis_clients import async_redis, sync_redis

from . import broadcast, deadlines, readings, services, timekeeping, webbeats
from .models import Match

log = logging.getLogger(__name__)

POLL_S = 0.02  # how soon a deadline set by another process is seen
MIN_WAIT_S = 0.003  # the authority's clock decides what is due: a wake-up a hair early waits again
TIMER_MARGIN_S = 0.001  # the loop's timers round to the millisecond: never wake a hair early
CLAIM_MS = 250  # longer than a fire takes; a fire that failed is retried when its claim lapses
BEAT_S = 0.25  # several beats a second: a beat missed now and then is no outage
BATCH = 200
REBUILD_CHECK_S = 1.0  # how often a web process checks that Redis still holds the deadlines
KEEPER_MARK_MS = 1_000  # a keeper unheard of for this long has stopped: web processes fire at once
LOOKAHEAD_MS = 60  # how far ahead the keeper makes forfeits: each is seen by two polls at least
WEB_DOWN_RETRY_MS = 1_000  # nobody can act while the web tier is down: asked again a second later
PENDING_RETRY_MIN_MS = 5  # a command stamped in time is applied in a few ms, as a rule
PREPARING = 2  # forfeits made ahead at once, at most: the deadlines due go first
# Lua: ``now``, the authority's time in whole milliseconds, as every script here reads it.
_AUTHORITY_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""
# The authority's time, the deadlines due by it (claimed), the next one, and those due within
# ARGV[6] ms, in one round trip. A keeper marks itself alive; while one is, a web process takes
# only deadlines ARGV[3] ms overdue (the keeper's, left undone), and its next comes that later.
_TAKE_DUE = (
    _AUTHORITY_NOW
    + """
local grace = 0
if ARGV[4] == '1' then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[5])
elseif redis.call('EXISTS', KEYS[2]) == 1 then
  grace = tonumber(ARGV[3])
end
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now - grace, 'LIMIT', 0, ARGV[1])
for _, match_id in ipairs(due) do
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), match_id)
end
local next = redis.call(
  'ZRANGEBYSCORE', KEYS[1], '(' .. (now - grace), '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local soon = {}
if tonumber(ARGV[6]) > 0 then
  soon = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, now + tonumber(ARGV[6]), 'WITHSCORES')
end
return {now, due, next[2] and tostring(tonumber(next[2]) + grace) or false, soon}
"""
)


# The keeper's claim of one deadline at its instant, if still where its forfeit was made ahead
# for: 'moved' (taken by a poll, or moved by a move), 'early' (the authority's time is not
# there yet: nothing claimed), or 'claimed'; with the authority's time.
_CLAIM_AT_DEADLINE = (
    _AUTHORITY_NOW
    + """
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then
  return {now, 'moved'}
end
if now < tonumber(ARGV[2]) then
  return {now, 'early'}
end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]), ARGV[1])
return {now, 'claimed'}
"""
)


class Taken(NamedTuple):
    now_ms: int  # the authority's time
    due: list[str]  # the matches due by it, claimed
    next_ms: int | None  # when this process should look again, at the latest
    soon: dict[str, int]  # the keeper's: deadlines due within LOOKAHEAD_MS, by match


_loops: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
WAITS = ("nothing_due", "early", "command_pending", "web_down")  # a fire that changed nothing


def fire_due(match_ids, now_ms: int) -> int:
    """Act on each match whose deadline has passed at ``now_ms``; returns how many changed."""
    return sum(fire(match_id, now_ms) not in WAITS for match_id in match_ids)


def fire(match_id: str, now_ms: int, *, conclude: bool = True) -> str:
    """Act on the match's deadline if it has passed at ``now_ms``; what came of it (see
    ``services.match_expire``, which concludes a forfeit unless told not to)."""
    try:
        outcome = services.match_expire(match_id=match_id, now_ms=now_ms, conclude=conclude)
    except services.CommandRejected:  # no such match (deleted): forget its deadline
        outcome = "nothing_due"
    if outcome in WAITS:
        _put_back(match_id, outcome)
    return outcome


def _put_back(match_id: str, outcome: str) -> None:
    """After a fire that changed nothing: Redis was behind the database (or another process
    fired it first), and the database wins, unless a change made since noted its own deadline
    (the seq guards it, as it guards a change's own writes). A deadline that must wait (for a
    command stamped in time, or for web to be back) is put back from its claim, to be asked
    again once that may have changed; by the time read now, since a fire may have waited long
    for its database thread."""
    row = Match.objects.filter(pk=match_id).values_list("deadline_ms", "seq").first()
    if row is None:  # no such match (deleted)
        deadlines.remember(match_id, None)
        return
    deadline_ms, seq = row
    if deadline_ms is not None and outcome in ("command_pending", "web_down"):
        now_ms = timekeeping.now_ms()
        deadline_ms = max(deadline_ms, now_ms + _retry_in_ms(outcome, now_ms - deadline_ms))
    broadcast.note_change(sync_redis(), match_id, seq, deadline_ms)


def _retry_in_ms(outcome: str, late_by_ms: int) -> int:
    """When to ask again about a deadline that had to wait: nobody can act while the web tier
    is down; a command stamped in time is applied within milliseconds, as a rule, but on an
    overloaded machine within seconds, and asking every few milliseconds meanwhile (a
    database read and a Redis round trip each time) adds to the load that delays it."""
    if outcome == "web_down":
        return WEB_DOWN_RETRY_MS
    return min(WEB_DOWN_RETRY_MS, max(PENDING_RETRY_MIN_MS, late_by_ms // 2))


async def take_due(limit: int = BATCH, *, keeper: bool = False) -> Taken:
    """The authority's time, the matches due by it (claimed for ``CLAIM_MS``: another poll
    does not take them meanwhile) and when the next one will be, if any; for the keeper, the
    deadlines due soon too. A web process's poll leaves a deadline to the keeper for
    ``WEB_DEADLINE_GRACE_MS`` while one is running."""
    keys = (deadlines.DEADLINES_KEY, deadlines.KEEPER_KEY)
    grace_ms = 0 if keeper else settings.WEB_DEADLINE_GRACE_MS
    now_ms, due, next_ms, soon = await async_redis().eval(
        _TAKE_DUE, 2, *keys, limit, CLAIM_MS, grace_ms, int(keeper), KEEPER_MARK_MS,
        LOOKAHEAD_MS if keeper else 0,
    )  # fmt: skip
    return Taken(
        int(now_ms),
        due,
        None if next_ms is None else int(float(next_ms)),
        {soon[n]: int(float(soon[n + 1])) for n in range(0, len(soon), 2)},
    )


def wait_before_next_poll_s(now_ms: int, next_deadline_ms: int | None) -> float:
    if next_deadline_ms is None:
        return POLL_S
    return min(POLL_S, max(MIN_WAIT_S, (next_deadline_ms - now_ms) / 1000 + TIMER_MARGIN_S))


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
    reading = asyncio.ensure_future(
        _every(readings.REFRESH_S, readings.refresh, "read the time, seqs and spectators")
    )
    fires = _Fires()
    try:
        await _every(POLL_S, _deadline_poller(fires), "fire deadlines (the sweeper will)")
    finally:
        fires.cancel()
        beating.cancel()
        marking.cancel()
        reading.cancel()


async def _every(period_s: float, step, what: str) -> None:
    """Run ``step`` every ``period_s`` (or after the seconds it returns) until cancelled,
    logging a failure once per outage."""
    me = asyncio.current_task()
    failing = False
    while not me.cancelling():  # a cancel that a library swallowed still ends the loop
        wait_s = period_s
        try:
            wait_s = await step() or period_s
            if failing:
                log.warning("cannot %s: working again", what)
            failing = False
        except Exception:
            if not failing:
                log.exception("cannot %s now", what)
            failing = True
        await asyncio.sleep(wait_s)


async def _beat() -> None:
    try:
        second, kept = await async_redis().eval(
            webbeats.BEAT, 1, webbeats.BEATS_KEY, webbeats.KEEP_S, webbeats.previous_beat()
        )
    except BaseException:  # a failure, or a cancel mid-beat: this process's run is broken
        webbeats.note_beat(None)
        raise
    webbeats.note_beat(int(second), previous_kept=bool(kept))


class _Fires:
    """The deadlines this process is firing, each in a task of its own: a poll does not wait
    for them, since a fire waits for the database, and every deadline due after it would wait
    too (at 1,000 matches, the forfeits that fell due while another was being made were the
    latest ones). The keeper also sets a timer at the deadline of each forfeit it made ahead."""

    def __init__(self) -> None:
        self.authority_ahead_ms = 0.0  # the authority's clock less this machine's, as last seen
        self.timers: dict[str, asyncio.TimerHandle] = {}  # the keeper's, by match
        # By match, a timer's claim on its way to Redis: None, or the authority's time at which
        # a poll of this process took that deadline meanwhile (the claim will find it moved).
        self.claiming: dict[str, int | None] = {}
        self.tasks: dict[str, asyncio.Task] = {}
        self.started_at: dict[str, float] = {}  # by match, the loop's time
        self.failing = False
        self.failed_at = float("-inf")
        self.ahead: dict[str, services.ForfeitAhead | None] = {}  # the keeper's, by match
        self.preparing: set[asyncio.Task] = set()
        self.preparing_fails = False

    def start(self, match_id: str, now_ms: int) -> None:
        """Fire a deadline that a poll took (claimed) at the authority's ``now_ms``."""
        if match_id in self.claiming:  # this poll's claim came first: the timer's fires it
            self.claiming[match_id] = now_ms
            return
        if (task := self.tasks.get(match_id)) is not None and not task.done():
            return  # still being fired here (its claim lapsed): the fire under way will do
        self._disarm(match_id)
        self._track(match_id, _fire(match_id, now_ms, self.ahead.pop(match_id, None)))

    def _track(self, match_id: str, firing: Coroutine) -> None:
        task = asyncio.ensure_future(firing)
        self.tasks[match_id] = task
        self.started_at[match_id] = asyncio.get_running_loop().time()
        task.add_done_callback(partial(self._done, match_id))

    def saw_authority(self, authority_ms: int, asked_at_ms: float, answered_at_ms: float) -> None:
        """The authority's time (whole milliseconds), read by a round trip between
        ``asked_at_ms`` and ``answered_at_ms`` by this machine's clock: the timers of the
        forfeits made ahead are set by it. Off by half the round trip at most; a timer that
        wakes early finds it so when it claims, and waits again."""
        self.authority_ahead_ms = authority_ms + 0.5 - (asked_at_ms + answered_at_ms) / 2

    def authority_now_ms(self) -> float:
        """The authority's time now, as this machine's clock reckons it."""
        return time.time() * 1000 + self.authority_ahead_ms

    def arm(self, match_id: str, ahead: services.ForfeitAhead, authority_now_ms: float) -> None:
        """Fire ``ahead`` when its deadline comes by this loop's timer, rather than at the
        poll after it (which comes a little later, and asks Redis once more)."""
        self._disarm(match_id)
        in_s = max(0.0, (ahead.deadline_ms - authority_now_ms) / 1000 + TIMER_MARGIN_S)
        loop = asyncio.get_running_loop()
        self.timers[match_id] = loop.call_later(in_s, self._at_deadline, match_id, ahead)

    def next_to_poll_for(self, taken: Taken) -> int | None:
        """The keeper's: the next deadline its poll must wake for, of those due soon: one that
        no timer of its own fires (a poll at that one would only race the timer's claim). None:
        none before the usual poll. ``soon`` reaches LOOKAHEAD_MS ahead, further than a poll
        ever waits (POLL_S), so no deadline that needs the poll sooner is missed."""
        return min(
            (ms for match_id, ms in taken.soon.items() if not self._armed_at(match_id, ms)),
            default=None,
        )

    def _armed_at(self, match_id: str, deadline_ms: int) -> bool:
        ahead = self.ahead.get(match_id)
        return match_id in self.timers and ahead is not None and ahead.deadline_ms == deadline_ms

    def _disarm(self, match_id: str) -> None:
        if (timer := self.timers.pop(match_id, None)) is not None:
            timer.cancel()

    def _at_deadline(self, match_id: str, ahead: services.ForfeitAhead) -> None:
        self.timers.pop(match_id, None)
        if self.ahead.get(match_id) is not ahead or match_id in self.claiming:
            return  # moved or fired since
        if self.standing_aside(asyncio.get_running_loop().time()):
            return  # the web processes fire it: see standing_aside
        self.claiming[match_id] = None
        self._track(match_id, _fire_at_deadline(match_id, ahead, self))

    def standing_aside(self, now: float) -> bool:
        """Should the keeper leave the deadlines to the web processes for now: has one of its
        fires failed within ``KEEPER_MARK_MS``, or run past its claim (a database that hangs,
        say)? It then neither takes them nor marks itself alive, so the web processes fire
        them at once instead of waiting for a keeper that cannot."""
        return now - self.failed_at < KEEPER_MARK_MS / 1000 or any(
            now - started > CLAIM_MS / 1000 for started in self.started_at.values()
        )

    def prepare(self, soon: dict[str, int]) -> None:
        """Make ahead the forfeits of the deadlines due ``soon`` (a few at a time: those due
        go first), so that at each deadline only Redis is asked and the end written; forget
        those whose deadline passed or moved."""
        for match_id, ahead in list(self.ahead.items()):
            if ahead is not None and soon.get(match_id, ahead.deadline_ms) != ahead.deadline_ms:
                self._forget_ahead(match_id)  # a move re-armed it
            elif match_id not in soon and match_id not in self.tasks:
                self._forget_ahead(match_id)  # fired, or moved past the lookahead
        for match_id, deadline_ms in soon.items():
            if match_id in self.ahead or match_id in self.tasks:
                continue  # made, or being fired (its claim lapsing)
            if len(self.preparing) >= PREPARING:
                break
            self.ahead[match_id] = None  # being made
            making = asyncio.ensure_future(self._make_ahead(match_id, deadline_ms))
            self.preparing.add(making)
            making.add_done_callback(self.preparing.discard)

    async def _make_ahead(self, match_id: str, deadline_ms: int) -> None:
        try:
            made = await in_database_threads(services.forfeit_ahead)(match_id, deadline_ms)
            self.preparing_fails = False
        except Exception:  # fired the usual way at its deadline, which says what is wrong
            if not self.preparing_fails:  # once per outage
                log.exception("cannot make forfeits ahead now (match %s)", match_id)
            self.preparing_fails, made = True, None
        if match_id in self.ahead:  # not fired meanwhile
            self.ahead[match_id] = made
            if made is not None:
                self.arm(match_id, made, self.authority_now_ms())

    def _forget_ahead(self, match_id: str) -> None:
        del self.ahead[match_id]
        self._disarm(match_id)

    def _done(self, match_id: str, task: asyncio.Task) -> None:
        if self.tasks.get(match_id) is task:  # not since replaced by a later fire of it
            del self.tasks[match_id], self.started_at[match_id]
        if task.cancelled():
            return
        if (failure := task.exception()) is None:
            if self.failing:
                log.warning("firing deadlines works again")
            self.failing = False
            return
        self.failed_at = asyncio.get_running_loop().time()
        if not self.failing:  # once per outage; a failed fire is retried when its claim lapses
            self.failing = True
            log.error("cannot fire deadlines now (match %s)", match_id, exc_info=failure)

    def cancel(self) -> None:
        for timer in self.timers.values():
            timer.cancel()
        for task in [*self.tasks.values(), *self.preparing]:
            task.cancel()


async def _fire(
    match_id: str,
    now_ms: int,
    ahead: services.ForfeitAhead | None = None,
    *,
    judged: str | None = None,
) -> None:
    """Act on the match's deadline: the forfeit made ahead if it stands (``judged``: what
    Redis's replies already made of it), else on a database thread; its broadcasts go as soon
    as it is done, and a forfeit is concluded after them."""
    async with broadcast.held():
        if ahead is None:
            outcome = None
        elif judged is None:
            outcome = await services.forfeit_made_ahead(ahead, now_ms)
        else:
            outcome = await services.write_forfeit_ahead(ahead, judged)
        if outcome is None:
            outcome = await in_database_threads(fire)(match_id, now_ms, conclude=False)
    if outcome in services.FORFEITS:  # told: now its record and ratings
        await in_database_threads(services.match_conclude)(match_id=match_id)


async def _fire_at_deadline(match_id: str, ahead: services.ForfeitAhead, fires: _Fires) -> None:
    """The keeper's fire of a forfeit made ahead, by its timer: the deadline claimed and what
    the forfeit asks Redis in one round trip, asked after the claim, so at the authority's
    deadline or later. Woken before it, nothing is claimed and the timer is set again. Taken
    meanwhile by a poll of this process, it is fired as that poll would; moved, or taken by
    another process, it is left to the polls."""
    asked_ms = max(ahead.deadline_ms, int(fires.authority_now_ms()))
    pipe = async_redis().pipeline(transaction=False)
    pipe.eval(_CLAIM_AT_DEADLINE, 1, deadlines.DEADLINES_KEY, match_id, ahead.deadline_ms, CLAIM_MS)
    judge = services.query_forfeit_ahead(pipe, ahead, asked_ms)
    try:
        (now_ms, claim), *replies = await pipe.execute()
    finally:
        taken_by_poll_ms = fires.claiming.pop(match_id, None)
    now_ms, claim = int(now_ms), claim.decode() if isinstance(claim, bytes) else claim
    if claim == "claimed":
        fires.ahead.pop(match_id, None)
        # Judged as of the second it was asked for (the web tier's beats go by the second).
        judged = judge(replies) if now_ms // 1000 == asked_ms // 1000 else None
        await _fire(match_id, now_ms, ahead, judged=judged)
    elif taken_by_poll_ms is not None:
        await _fire(match_id, taken_by_poll_ms, fires.ahead.pop(match_id, None))
    elif claim == "early":
        fires.arm(match_id, ahead, now_ms)


def _deadline_poller(fires: _Fires, *, keeper: bool = False):
    """One poll: rebuild the deadline set if Redis lost it (checked every REBUILD_CHECK_S),
    then start firing what is due."""
    rebuild_if_lost = database_sync_to_async(deadlines.rebuild_if_lost)
    checked_at = [float("-inf")]

    async def poll() -> float:
        loop = asyncio.get_running_loop()
        if keeper and fires.standing_aside(loop.time()):
            return POLL_S
        if loop.time() - checked_at[0] >= REBUILD_CHECK_S:
            checked_at[0] = loop.time()
            await rebuild_if_lost()
        asked_at_ms = time.time() * 1000
        taken = await take_due(keeper=keeper)
        if keeper:
            fires.saw_authority(taken.now_ms, asked_at_ms, time.time() * 1000)
        next_ms = fires.next_to_poll_for(taken) if keeper else taken.next_ms
        wake_at = loop.time() + wait_before_next_poll_s(taken.now_ms, next_ms)
        for match_id in taken.due:
            fires.start(match_id, taken.now_ms)
        if keeper:
            fires.prepare(taken.soon)
        return max(MIN_WAIT_S, wake_at - loop.time())

    return poll


async def keep_deadlines() -> None:
    """The deadline keeper's loop (``manage.py keep_deadlines``): a process that does nothing
    else fires each deadline when it falls due, its loop never busy with sockets. While it
    runs, the web processes' polls leave deadlines to it; if it stops, they fire them again."""
    fires = _Fires()
    try:
        poll = _deadline_poller(fires, keeper=True)
        await _every(POLL_S, poll, "fire deadlines (the web processes will)")
    finally:
        fires.cancel()
