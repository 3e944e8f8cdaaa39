"""What a web process remembers so that pings and broadcasts need no round trip of their own
(matches/readings.py): the authority's time from the fastest recent reading, the seqs of the
matches open here, and which matches are watched, each vouched for only while fresh. Time is a
parameter: every figure here is exact."""

import pytest

from matches import presence, readings
from realtime.redis_clients import sync_redis

AUTHORITY_S = 1_796_500_000  # a reading of TIME: whole seconds ...


def reading(memory, *, authority_ms: float, sent_at: float, round_trip_ms: float) -> None:
    """A reading of the authority at ``authority_ms``, asked at monotonic ``sent_at``."""
    seconds, ms = divmod(authority_ms, 1000)
    memory.note_time((int(seconds), int(ms * 1000)), sent_at, sent_at + round_trip_ms / 1000)


def test_the_time_is_the_authoritys_at_the_middle_of_the_reading_and_runs_with_this_process():
    memory = readings.Memory()
    reading(memory, authority_ms=AUTHORITY_S * 1000 + 500, sent_at=100.0, round_trip_ms=250)
    # Read at 100.125 s of this process's clock (the middle); asked at 100.5 s.
    assert memory.answer("m", 100.5) == (AUTHORITY_S * 1000 + 875, None)


def test_the_fastest_round_trip_sets_the_offset_until_it_is_old():
    memory = readings.Memory()
    reading(memory, authority_ms=1_000_000, sent_at=10.0, round_trip_ms=0)
    # A slower reading, 85 ms off the first: it would put the clock 85 ms wrong.
    reading(memory, authority_ms=1_001_040, sent_at=11.0, round_trip_ms=250)
    assert memory.answer("m", 11.5)[0] == 1_001_500  # still the fast reading's
    # Past KEEP_OFFSET_S, any reading beats an old one (the authority may have moved).
    later = 10.0 + readings.KEEP_OFFSET_S + 1
    reading(memory, authority_ms=1_020_000, sent_at=later, round_trip_ms=250)
    assert memory.answer("m", later + 0.125)[0] == 1_020_000


def test_slower_readings_keep_the_fast_offset_fresh():
    memory = readings.Memory()
    reading(memory, authority_ms=1_000_000, sent_at=10.0, round_trip_ms=0)
    for n in range(1, 9):  # twice a second, each slower than the first
        reading(memory, authority_ms=1_000_000 + n * 500, sent_at=10.0 + n / 2, round_trip_ms=250)
    assert memory.answer("m", 14.5)[0] == 1_004_500  # 4.5 s after the fast one: still trusted


def test_nothing_is_vouched_for_once_the_last_reading_is_no_longer_fresh():
    memory = readings.Memory()
    memory.opened("m")
    reading(memory, authority_ms=1_000_000, sent_at=10.0, round_trip_ms=0)
    memory.note_matches(["m"], ["7"], [], 10.0)
    assert memory.answer("m", 10.0 + readings.FRESH_S) == (1_000_000 + readings.FRESH_S * 1000, 7)
    assert memory.answer("m", 10.0 + readings.FRESH_S + 0.001) == (None, None)


def test_seqs_are_kept_for_the_matches_open_here_only_and_forgotten_with_their_last_socket():
    memory = readings.Memory()
    memory.opened("a")
    memory.opened("a")
    memory.opened("b")
    memory.note_matches(["a", "b", "gone"], ["3", None, "9"], [], 5.0)
    assert memory.seqs == {"a": 3}  # Redis holds none for b: the ping will ask
    memory.closed("a")
    assert memory.answer("a", 5.0)[1] == 3  # one socket of it is still open
    memory.closed("a")
    assert (memory.answer("a", 5.0)[1], dict(memory.open_here)) == (None, {"b": 1})


def test_a_socket_that_closes_without_having_opened_forgets_nothing_else():
    memory = readings.Memory()
    memory.closed("x")  # its opening failed before it counted
    memory.opened("x")
    assert dict(memory.open_here) == {"x": 1}


@pytest.fixture
def seq_keys():
    keys = []

    def make(match_id: str, seq: int | None) -> str:
        key = readings.SEQ_KEY.format(match_id)
        keys.append(key)
        if seq is not None:
            sync_redis().set(key, seq)
        return match_id

    yield make
    sync_redis().delete(*keys)


async def test_one_round_trip_reads_the_time_the_open_matches_seqs_and_the_watched(seq_keys):
    memory = readings.Memory()
    for match_id, seq in (("readings-test-a", 12), ("readings-test-b", None)):
        memory.opened(seq_keys(match_id, seq))
    await presence.watching("readings-test-b", "specific.channel!x")
    try:
        before_ms = int(sync_redis().time()[0]) * 1000
        await readings.refresh(memory)
        after_ms = (int(sync_redis().time()[0]) + 1) * 1000
    finally:
        await presence.stopped_watching("readings-test-b", "specific.channel!x")
    assert memory.seqs == {"readings-test-a": 12}
    server_ms, seq = memory.answer("readings-test-a", memory.offset.read_at)
    assert (before_ms <= server_ms <= after_ms, seq) == (True, 12)
    now = memory.read_at
    assert (memory.unwatched("readings-test-a", now), memory.unwatched("readings-test-b", now)) == (
        True,
        False,
    )


def test_a_match_is_unwatched_only_while_a_fresh_reading_says_so():
    memory = readings.Memory()
    assert not memory.unwatched("m", 1.0)  # never read (a worker): send to spectators
    memory.note_matches([], [], {"w"}, 1.0)
    assert (memory.unwatched("m", 1.0), memory.unwatched("w", 1.0)) == (True, False)
    assert not memory.unwatched("m", 1.0 + readings.FRESH_S + 0.001)  # too old to trust
    memory.opened("m", spectator=True)  # a spectator here counts before any reading
    assert not memory.unwatched("m", 1.0)
    memory.closed("m", spectator=True)
    assert memory.unwatched("m", 1.0)


def test_the_catch_up_comes_after_every_reading_that_could_have_missed_the_spectator():
    # A reading made just before the spectator was marked is trusted for FRESH_S; the
    # spectator's socket looks back once after that (and a broadcast's trip to the layer).
    assert readings.CATCH_UP_S > readings.FRESH_S + readings.REFRESH_S
