"""The lobby's snapshot sequence: open pages drop a snapshot older than the last they applied."""

from config.redis_clients import sync_redis
from lobby.broadcast import SEQ_KEY, next_seq


def test_the_sequence_grows_with_each_snapshot():
    first = next_seq(now_us=1_000)
    assert next_seq(now_us=1_000) == first + 1


def test_the_sequence_never_goes_back_when_redis_loses_its_counter():
    before = next_seq(now_us=2_000_000_000_000_000)
    sync_redis().delete(SEQ_KEY)  # Redis restarted without its data
    after = next_seq(now_us=2_000_000_000_000_001)
    assert after > before


def test_a_wall_clock_behind_the_counter_does_not_pull_it_back():
    ahead = next_seq(now_us=3_000_000_000_000_000)
    assert next_seq(now_us=5) == ahead + 1
