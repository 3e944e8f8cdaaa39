"""The lobby's snapshot sequence: open pages drop a snapshot older than the last they applied."""

import uuid

import pytest

from lobby import broadcast
from lobby.broadcast import next_seq
from realtime.redis_clients import sync_redis


@pytest.fixture(autouse=True)
def own_counter(monkeypatch):
    key = f"sbo:lobby:seq:test-{uuid.uuid4().hex}"
    monkeypatch.setattr(broadcast, "SEQ_KEY", key)
    yield key
    sync_redis().delete(key)


def test_the_sequence_grows_with_each_snapshot():
    first = next_seq(now_us=1_000)
    assert next_seq(now_us=1_000) == first + 1


def test_the_sequence_never_goes_back_when_redis_loses_its_counter(own_counter):
    before = next_seq(now_us=2_000_000_000_000_000)
    sync_redis().delete(own_counter)  # Redis restarted without its data
    after = next_seq(now_us=2_000_000_000_000_001)
    assert after > before


def test_a_wall_clock_behind_the_counter_does_not_pull_it_back():
    ahead = next_seq(now_us=3_000_000_000_000_000)
    assert next_seq(now_us=5) == ahead + 1
