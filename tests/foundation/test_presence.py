"""Socket presence is marked on each process's timer, not on every message: an open socket stays
counted however quiet it is, a closed one stops counting (realtime/presence.py)."""

from __future__ import annotations

import uuid

import pytest

from realtime.presence import SocketPresence, refresh_all
from realtime.redis_clients import sync_redis


def counted(presence: SocketPresence, subject, now_ms: int) -> int:
    return int(presence.query_count(sync_redis(), subject, now_ms))


STALE_MS = 90_000
T0 = 1_800_000_000_000


@pytest.fixture
def presence():
    pattern = f"sbo:test:presence:{uuid.uuid4().hex}:{{}}"
    tracker = SocketPresence(pattern, stale_ms=STALE_MS)
    yield tracker
    SocketPresence.every.remove(tracker)
    for key in sync_redis().scan_iter(pattern.format("*")):
        sync_redis().delete(key)


async def test_an_open_socket_counts_for_as_long_as_its_process_marks_it(presence):
    await presence.seen("ala", "channel-1", T0)
    assert counted(presence, "ala", T0 + STALE_MS) == 1
    assert counted(presence, "ala", T0 + STALE_MS + 1) == 0, "unmarked past 90 s: no longer counted"
    await refresh_all(T0 + STALE_MS - 1)  # the process's timer, with nothing sent meanwhile
    assert counted(presence, "ala", T0 + 2 * STALE_MS - 2) == 1


async def test_a_closed_socket_is_no_longer_marked(presence):
    await presence.seen("ala", "channel-1", T0)
    await presence.seen("ala", "channel-2", T0)
    assert await presence.left("ala", "channel-1", T0 + 1) == 1
    await refresh_all(T0 + 60_000)
    assert counted(presence, "ala", T0 + STALE_MS + 1) == 1  # channel-2 only, marked at +60 s
    assert await presence.left("ala", "channel-2", T0 + 60_001) == 0
    await refresh_all(T0 + 70_000)
    assert counted(presence, "ala", T0 + 70_000) == 0


async def test_one_refresh_marks_the_sockets_of_every_kind_of_presence(presence):
    other = SocketPresence(presence.key_pattern + ":other", stale_ms=STALE_MS)
    try:
        for n in range(50):
            await presence.seen(f"user{n}", f"channel-{n}", T0)
        await other.seen("seat", "channel-x", T0)
        assert await refresh_all(T0 + 1_000) >= 51
        assert all(counted(presence, f"user{n}", T0 + STALE_MS + 500) == 1 for n in range(50))
        assert counted(other, "seat", T0 + STALE_MS + 500) == 1
    finally:
        SocketPresence.every.remove(other)
        sync_redis().delete(other.key("seat"))
