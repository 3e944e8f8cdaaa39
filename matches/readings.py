"""What a web process last read from Redis about the matches it serves, so that neither a ping
nor a move's broadcast has to ask: the authority's time, each open match's last event number,
and which matches have spectators.

Every client pings every few seconds (two hundred Redis round trips a second in each web
process at a thousand matches, more than the moves made), and every change was built and
published for spectators, whom almost no match has. Instead each web process reads all three
in one round trip every ``REFRESH_S`` (``refresh``, run by matches/scheduler.py):

- The time: the authority minus this process's monotonic clock, taken from the reading with
  the fastest round trip of the last ``KEEP_OFFSET_S`` (as NTP does), is off by at most half
  that round trip. A pong's ``server_ms`` only helps a client draw its clocks: arrivals are
  still stamped by the authority itself (matches/timekeeping.py).
- The seq: at most ``REFRESH_S`` old, or newer from what the socket was sent. A pong that
  names a seq the client has not seen reveals a lost broadcast; half a second later than a
  round trip would have, which the client's own grace before it resyncs dwarfs.
- The watched matches: a spectator's socket is in a Redis set (matches/presence.py) before it
  reads the match; a change made before every web process has read the set again may not be
  sent to spectators, so a new spectator's socket catches up once, ``CATCH_UP_S`` after it
  opened (matches/consumers.py).

With no fresh reading (Redis unreachable, a process just started, a match just opened here,
a Celery worker), nothing is taken from memory: a ping asks Redis itself (``clock_and_seq``)
and every change is sent to spectators.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from redis.exceptions import RedisError

from realtime.redis_clients import async_redis

from . import presence
from .timekeeping import authority_ms

SEQ_KEY = "sbo:seq:{}"
REFRESH_S = 0.5
FRESH_S = 2.0  # past this, a reading is not vouched for
KEEP_OFFSET_S = 10.0  # a clock offset this old gives way to any newer reading
CATCH_UP_S = 2 * FRESH_S  # by then every web process has read the set again, or sends to all


@dataclass(frozen=True)
class _Offset:
    ms: float  # the authority's time minus this process's monotonic clock
    round_trip_ms: float
    read_at: float  # monotonic seconds


class Memory:
    """What this process last read: the clock offset, each open match's seq, the watched
    matches (and the spectators' sockets open here, known before any reading)."""

    def __init__(self):
        self.open_here: Counter[str] = Counter()  # match id -> sockets open in this process
        self.watched_here: Counter[str] = Counter()  # match id -> spectators' sockets here
        self.offset: _Offset | None = None
        self.time_read_at: float | None = None  # the last reading's (maybe not the offset's)
        self.seqs: dict[str, int] = {}
        self.watched: frozenset[str] = frozenset()
        self.read_at: float | None = None  # of the seqs and the watched matches

    def opened(self, match_id: str, *, spectator: bool = False) -> None:
        self.open_here[match_id] += 1
        if spectator:
            self.watched_here[match_id] += 1

    def closed(self, match_id: str, *, spectator: bool = False) -> None:
        if _drop(self.open_here, match_id):
            self.seqs.pop(match_id, None)
        if spectator:
            _drop(self.watched_here, match_id)

    def note_time(self, redis_time, sent_at: float, received_at: float) -> None:
        """A reading of the authority (``TIME``: seconds, microseconds) made between two
        monotonic instants."""
        seconds, microseconds = redis_time
        offset = _Offset(
            ms=int(seconds) * 1000 + int(microseconds) / 1000 - (sent_at + received_at) * 500,
            round_trip_ms=(received_at - sent_at) * 1000,
            read_at=received_at,
        )
        self.time_read_at = received_at
        kept = self.offset
        if (
            kept is None
            or offset.round_trip_ms <= kept.round_trip_ms
            or (received_at - kept.read_at > KEEP_OFFSET_S)
        ):
            self.offset = offset

    def note_matches(self, match_ids: list[str], seqs: list, watched, read_at: float) -> None:
        """The seqs read for ``match_ids`` (None where Redis holds none) and the ``watched``
        matches, read at ``read_at``."""
        self.seqs = {
            match_id: int(seq)
            for match_id, seq in zip(match_ids, seqs, strict=True)
            if seq is not None and match_id in self.open_here
        }
        self.watched = frozenset(watched)
        self.read_at = read_at

    def _fresh(self, read_at: float | None, now: float) -> bool:
        return read_at is not None and now - read_at <= FRESH_S

    def answer(self, match_id: str, now: float) -> tuple[int | None, int | None]:
        """The authority's time and the match's seq at monotonic ``now``, each None unless
        a fresh reading says."""
        server_ms = seq = None
        if self.offset is not None and self._fresh(self.time_read_at, now):
            server_ms = int(self.offset.ms + now * 1000)
        if self._fresh(self.read_at, now):
            seq = self.seqs.get(match_id)
        return server_ms, seq

    def unwatched(self, match_id: str, now: float) -> bool:
        """Does a fresh reading say that nobody watches the match?"""
        return (
            self._fresh(self.read_at, now)
            and match_id not in self.watched
            and match_id not in self.watched_here
        )


def _drop(counter: Counter, key: str) -> bool:
    """One fewer ``key`` in ``counter``; True if none is left."""
    counter[key] -= 1
    if counter[key] > 0:
        return False
    del counter[key]
    return True


MEMORY = Memory()


async def refresh(memory: Memory = MEMORY) -> None:
    """Read the authority's time, the seqs of the matches open here and the watched matches,
    in one round trip."""
    match_ids = list(memory.open_here)
    pipe = async_redis().pipeline(transaction=False)
    pipe.time()
    presence.query_watched(pipe)
    if match_ids:
        pipe.mget([SEQ_KEY.format(match_id) for match_id in match_ids])
    sent_at = time.monotonic()
    redis_time, watchers, *seqs = await pipe.execute()
    received_at = time.monotonic()
    memory.note_time(redis_time, sent_at, received_at)
    memory.note_matches(
        match_ids, seqs[0] if seqs else [], presence.watched_matches(watchers), received_at
    )


async def pong(match_id: str, memory: Memory = MEMORY) -> tuple[int | None, int | None]:
    """A ping's ``server_ms`` and ``seq``: from memory, else from Redis (the seq None when
    Redis cannot say: the database must)."""
    server_ms, seq = memory.answer(match_id, time.monotonic())
    if server_ms is None or seq is None:
        server_ms, seq = await clock_and_seq(match_id)
    return server_ms, seq


async def clock_and_seq(match_id) -> tuple[int | None, int | None]:
    """The authority's time and the match's last event number, in one round trip (either None
    when Redis cannot say: the time while it cannot be read, the seq after Redis lost it)."""
    try:
        pipe = async_redis().pipeline(transaction=False)
        pipe.time()
        pipe.get(SEQ_KEY.format(match_id))
        redis_time, seq = await pipe.execute()
    except RedisError:
        return None, None
    return authority_ms(redis_time), None if seq is None else int(seq)
