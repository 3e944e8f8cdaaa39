"""A ping's answer from memory: the authority's time and the match's last event number, as
this web process last read them from Redis, so that a ping costs no round trip of its own.

Every client pings every few seconds; at a thousand matches that was two hundred Redis round
trips a second in each web process, more than the moves themselves made. Instead, each web
process reads the authority's ``TIME`` and the last event numbers of every match it has a
socket of, in one round trip every ``REFRESH_S`` (``refresh``, run by matches/scheduler.py).

- The time: the authority minus this process's monotonic clock, taken from the reading with
  the fastest round trip of the last ``KEEP_OFFSET_S`` (as NTP does), is off by at most half
  that round trip. A pong's ``server_ms`` only helps a client draw its clocks: arrivals are
  still stamped by the authority itself (matches/timekeeping.py).
- The seq: at most ``REFRESH_S`` old, or newer from what this socket was sent. A pong that
  names a seq the client has not seen reveals a lost broadcast; one ``REFRESH_S`` later than a
  round trip would have, which the client's own grace before it resyncs dwarfs.

With no fresh reading (Redis unreachable, the process just started, a match just opened
here), a ping asks Redis itself, then the database, as before (``clock_and_seq``).
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass

from realtime.database import in_database_threads
from realtime.redis_clients import async_redis

from . import broadcast, selectors

REFRESH_S = 0.5
FRESH_S = 2.0  # past this, a reading is not vouched for: the ping asks Redis itself
KEEP_OFFSET_S = 10.0  # a clock offset this old gives way to any newer reading


@dataclass(frozen=True)
class _Offset:
    ms: float  # the authority's time minus this process's monotonic clock
    round_trip_ms: float
    read_at: float  # monotonic seconds


class Memory:
    """What this process last read: the clock offset and each open match's seq."""

    def __init__(self):
        self.open_here: Counter[str] = Counter()  # match id -> sockets open in this process
        self.offset: _Offset | None = None
        self.seqs: dict[str, int] = {}
        self.seqs_read_at: float | None = None

    def opened(self, match_id: str) -> None:
        self.open_here[match_id] += 1

    def closed(self, match_id: str) -> None:
        self.open_here[match_id] -= 1
        if self.open_here[match_id] <= 0:
            del self.open_here[match_id]
            self.seqs.pop(match_id, None)

    def note_time(self, redis_time, sent_at: float, received_at: float) -> None:
        """A reading of the authority (``TIME``: seconds, microseconds) made between two
        monotonic instants."""
        seconds, microseconds = redis_time
        authority_ms = int(seconds) * 1000 + int(microseconds) / 1000
        offset = _Offset(
            ms=authority_ms - (sent_at + received_at) * 500,
            round_trip_ms=(received_at - sent_at) * 1000,
            read_at=received_at,
        )
        kept = self.offset
        if (
            kept is None
            or offset.round_trip_ms <= kept.round_trip_ms
            or (received_at - kept.read_at > KEEP_OFFSET_S)
        ):
            self.offset = offset

    def note_seqs(self, match_ids: list[str], seqs: list, read_at: float) -> None:
        """The seqs read for ``match_ids`` (None where Redis holds none), at ``read_at``."""
        self.seqs = {
            match_id: int(seq)
            for match_id, seq in zip(match_ids, seqs, strict=True)
            if seq is not None and match_id in self.open_here
        }
        self.seqs_read_at = read_at

    def answer(self, match_id: str, now: float) -> tuple[int | None, int | None]:
        """The authority's time and the match's seq at monotonic ``now``, each None unless
        a fresh reading says."""
        server_ms = seq = None
        if self.offset is not None and now - self.offset.read_at <= FRESH_S:
            server_ms = int(self.offset.ms + now * 1000)
        if self.seqs_read_at is not None and now - self.seqs_read_at <= FRESH_S:
            seq = self.seqs.get(match_id)
        return server_ms, seq


MEMORY = Memory()


async def refresh(memory: Memory = MEMORY) -> None:
    """Read the authority's time and the seqs of the matches open here, in one round trip."""
    match_ids = list(memory.open_here)
    pipe = async_redis().pipeline(transaction=False)
    pipe.time()
    if match_ids:
        pipe.mget([broadcast.SEQ_KEY.format(match_id) for match_id in match_ids])
    sent_at = time.monotonic()
    redis_time, *seqs = await pipe.execute()
    received_at = time.monotonic()
    memory.note_time(redis_time, sent_at, received_at)
    memory.note_seqs(match_ids, seqs[0] if seqs else [], received_at)


async def pong(match_id: str, sent_seq: int, memory: Memory = MEMORY) -> tuple[int | None, int]:
    """A ping's ``server_ms`` and ``seq`` for a socket that was sent events up to
    ``sent_seq``: from memory, else from Redis, else (Redis lost the seq) the database."""
    server_ms, seq = memory.answer(match_id, time.monotonic())
    if server_ms is None or seq is None:
        server_ms, seq = await broadcast.clock_and_seq(match_id)
    if seq is None:
        seq = await in_database_threads(selectors.last_seq)(match_id)
    return server_ms, max(seq, sent_seq)
