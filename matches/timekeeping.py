"""The one time authority: Redis ``TIME``, in milliseconds since the Unix epoch.

A command's arrival is stamped (and registered as pending for its match) in one atomic Lua
script, before the command waits for any lock. The timeout path refuses to time a player out
while a command stamped before the deadline is still pending, so such a command always wins.

Each process also watches the authority against its own monotonic clock and reports what looks
like a timing fault of the service (see ``ClockWatch``).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from dataclasses import dataclass
from functools import partial

from django.conf import settings
from redis.backoff import ExponentialBackoff
from redis.exceptions import RedisError
from redis.retry import Retry

from realtime.redis_clients import async_redis, sync_redis, write_again_later

from .models import TimingFault

ARRIVALS_KEY = "sbo:arrivals:{match_id}"
PENDING_TTL_MS = 60_000  # a pending arrival older than this was lost with its process

log = logging.getLogger(__name__)

_STAMP = """
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], ms, ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return ms
"""


def setting_ms(name: str, default: int) -> int:
    return int(getattr(settings, name, default))


def monotonic_ms() -> float:
    return time.monotonic() * 1000


def authority_ms(redis_time) -> int:
    seconds, microseconds = redis_time
    return int(seconds) * 1000 + int(microseconds) // 1000


@dataclass
class Arrival:
    """A stamped command: ``at_ms`` by the authority, ``lag_ms`` spent getting the stamp."""

    match_id: str
    token: str
    at_ms: int
    lag_ms: float


class ClockWatch:
    """Compares consecutive readings of the authority with this process's monotonic clock: the
    authority going backwards, or moving more or less than the monotonic clock did, is a
    suspected fault of the service's timekeeping."""

    def __init__(self):
        self.last: tuple[int, float] | None = None

    def observe(self, authority: int, monotonic: float) -> tuple[str, dict] | None:
        last, self.last = self.last, (authority, monotonic)
        if last is None:
            return None
        moved, elapsed = authority - last[0], monotonic - last[1]
        tolerance = setting_ms("TIME_JUMP_TOLERANCE_MS", 1_000)
        detail = {"authority_moved_ms": moved, "monotonic_elapsed_ms": round(elapsed, 1)}
        if moved < -tolerance:
            return "backwards", detail
        if abs(moved - elapsed) > tolerance:
            return "jump", detail
        return None


WATCH = ClockWatch()


def now_ms() -> int:
    """The authority's time, for the timeout path and the sweeper."""
    return authority_ms(sync_redis().time())


def now_ms_or_wall() -> int:
    """The authority's time, or this machine's wall clock when the authority cannot be read
    (voiding a match for a timing fault must work even then)."""
    try:
        return now_ms()
    except Exception:
        return int(time.time() * 1000)


async def stamp_arrival(match_id: str, token: str | None = None) -> Arrival:
    """Stamp a command's arrival and register it as pending for its match (as ``token``)."""
    token, started = token or uuid.uuid4().hex, monotonic_ms()
    at_ms = await async_redis().eval(*_stamp_args(match_id, token))
    return Arrival(match_id, token, int(at_ms), monotonic_ms() - started)


class StampFailed(Exception):
    """The command's arrival could not be stamped: it is not applied."""


class StampInFlight:
    """A command's arrival while the event loop gets its stamp (made on the loop): a database
    thread reads the match meanwhile and waits for the time (``at_ms``) only once it needs it."""

    WAIT_S = 30.0  # the Redis calls give up within seconds: a loop this late is wedged

    def __init__(self, match_id: str):
        self.match_id = match_id
        self.token = uuid.uuid4().hex
        self._settled = threading.Event()
        self._lock = threading.Lock()  # a thread takes the time as the loop abandons it
        self._arrival: Arrival | None = None
        self._abandoned = self._taken = False
        self._stamping = asyncio.ensure_future(stamp_arrival(match_id, self.token))
        self._stamping.add_done_callback(self._settle)

    def _settle(self, stamping: asyncio.Future) -> None:
        with self._lock:
            if not (self._abandoned or stamping.cancelled() or stamping.exception()):
                self._arrival = stamping.result()
        self._settled.set()

    async def arrival(self) -> Arrival:
        """The stamp, or what ``stamp_arrival`` raised (shielded: see ``abandon``)."""
        return await asyncio.shield(self._stamping)

    @property
    def at_ms(self) -> int:
        """The stamp's time, waited for (from a thread other than the loop's); StampFailed if
        there is none, or if its command was abandoned first."""
        if not self._settled.wait(self.WAIT_S):
            raise StampFailed
        with self._lock:
            if self._arrival is None:
                raise StampFailed
            self._taken = True
            return self._arrival.at_ms

    def abandon(self, applying: asyncio.Future | None = None) -> None:
        """Its command's socket closed while the stamp was in flight: the command is not
        applied, unless the database thread ``applying`` it has taken its time already, and
        the stamp, which Redis may make all the same, is released once nothing can apply the
        command any more (left pending, it would hold back the match's forfeits for
        ``PENDING_TTL_MS``)."""
        with self._lock:
            self._abandoned = True
            if not self._taken:
                self._arrival = None
        (applying or self._stamping).add_done_callback(self._release_abandoned)

    def _release_abandoned(self, last: asyncio.Future) -> None:
        if not last.cancelled():
            last.exception()  # its outcome is nobody's now
        release_later(self.match_id, self.token)


def settled_ms(arrival_ms: int | StampInFlight) -> int:
    """A command's arrival time, waiting for its stamp if it is still in flight."""
    return arrival_ms if isinstance(arrival_ms, int) else arrival_ms.at_ms


def stamp_arrival_sync(match_id: str) -> Arrival:
    """``stamp_arrival`` for a command made inside the server (the computer's)."""
    token, started = uuid.uuid4().hex, monotonic_ms()
    at_ms = sync_redis().eval(*_stamp_args(match_id, token))
    return Arrival(match_id, token, int(at_ms), monotonic_ms() - started)


def release_into(pipe, match_id: str, token: str) -> None:
    """The arrival ``token`` is no longer pending, as part of ``pipe``'s round trip (or at
    once, given a client)."""
    pipe.zrem(ARRIVALS_KEY.format(match_id=match_id), token)


# A command made inside the server (the computer's, on a worker) has no loop to release its
# arrival later: it is tried again here, 5 s of waits between tries (with Redis down, each try
# also waits out its own timeouts: 15 s in all), before it is left to expire.
RELEASE_RETRY = Retry(ExponentialBackoff(cap=2.0, base=0.1), retries=5)


def release_arrival_sync(arrival: Arrival) -> None:
    def failed(error: Exception, failures: int) -> None:
        log.warning("could not release a command's arrival (try %d): %r", failures, error)

    try:
        RELEASE_RETRY.call_with_retry(
            lambda: release_into(sync_redis(), arrival.match_id, arrival.token),
            failed,
            with_failure_count=True,
        )
    except RedisError:  # left pending, it holds back the match's forfeits for PENDING_TTL_MS
        log.error("match %s: a command's arrival is left pending", arrival.match_id)


def _stamp_args(match_id: str, token: str) -> tuple:
    return (_STAMP, 1, ARRIVALS_KEY.format(match_id=match_id), token, PENDING_TTL_MS)


def suspicions(arrival: Arrival) -> list[tuple[str, dict]]:
    """What this stamp suggests about the service's own timekeeping: a stamp that took too
    long to get, or an authority that moved unlike this process's monotonic clock."""
    found = []
    if arrival.lag_ms > setting_ms("STAMP_LATE_TOLERANCE_MS", 2_000):
        found.append((TimingFault.Kind.LATE_STAMP, {"lag_ms": round(arrival.lag_ms, 1)}))
    suspicion = WATCH.observe(arrival.at_ms, monotonic_ms() - arrival.lag_ms / 2)
    if suspicion is not None:
        found.append(suspicion)
    return found


async def release_arrival(arrival: Arrival) -> None:
    try:
        await async_redis().zrem(ARRIVALS_KEY.format(match_id=arrival.match_id), arrival.token)
    except RedisError:  # left pending, it would hold back the match's forfeits for a minute
        release_later(arrival.match_id, arrival.token)


def release_later(match_id: str, token: str) -> None:
    """Release the arrival ``token`` from the loop once Redis takes it: also one whose stamp
    failed without a reply (Redis may have made it all the same)."""
    write_again_later(partial(release_into, match_id=match_id, token=token))


def pending_before(match_id: str, deadline_ms: int, now: int) -> int:
    """How many commands stamped before ``deadline_ms`` (and not lost) are still pending."""
    return query_pending_before(sync_redis(), match_id, deadline_ms, now)


def query_pending_before(redis, match_id: str, deadline_ms: int, now: int):
    """``pending_before`` asked of ``redis``: a client (the answer) or a pipeline (queued)."""
    return redis.zcount(
        ARRIVALS_KEY.format(match_id=match_id), now - PENDING_TTL_MS, deadline_ms - 1
    )
