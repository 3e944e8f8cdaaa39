"""A player's command from the socket to the service (matches/commands.py): its match is read
while its arrival is stamped, no row is locked before the stamp, and a stamp that fails leaves
nothing applied and nothing waiting. Real database and Redis; the stamp is held back at a gate
where a test must see what happens meanwhile."""

from __future__ import annotations

import asyncio
import random
import threading

import pytest
from channels.db import database_sync_to_async
from django.db import connection, connections
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

import engine
from matches import commands, rows, services, timekeeping
from matches.models import Match, TimingFault
from matches.selectors import match_state
from realtime import database
from realtime.redis_clients import PoolBusy, sync_redis
from tests.accounts.factories import make_user
from tests.support.dealing import deal_by_service

pytestmark = pytest.mark.django_db(transaction=True)

TIMEOUT_S = 5


@database_sync_to_async
def dealt_match() -> tuple[Match, dict, int]:
    """A match whose first round is dealt, its users by seat, and the seat to press Start."""
    users = {0: make_user("ann"), 1: make_user("bob")}
    match = services.match_create(player0=users[0], player1=users[1], now_ms=timekeeping.now_ms())
    deal_by_service(match, users, timekeeping.now_ms())
    return match, users, engine.first_to_act(match_state(Match.objects.get(pk=match.pk)))


@database_sync_to_async
def started_match() -> tuple[Match, dict, int, dict]:
    """A match whose first round has started: its users by seat, the decider, a legal move."""
    users = {0: make_user("cal"), 1: make_user("dee")}
    match = services.match_create(player0=users[0], player1=users[1], now_ms=timekeeping.now_ms())
    deal_by_service(match, users, timekeeping.now_ms())
    starter = engine.first_to_act(match_state(Match.objects.get(pk=match.pk)))
    services.match_submit(
        match_id=match.pk, user=users[starter], command={"type": "start"},
        arrival_ms=timekeeping.now_ms(),
    )  # fmt: skip
    match.refresh_from_db()
    state = match_state(match)
    move = engine.GreedyBot().choose(state, state.decider, random.Random(0))
    return match, users, state.decider, move


@database_sync_to_async
def seq_of(match: Match) -> int:
    return Match.objects.get(pk=match.pk).seq


class GatedStamp:
    """The real stamp, got only once the test opens the gate (or failing with ``fails``)."""

    def __init__(
        self, monkeypatch, fails: Exception | None = None, *, reply_lost=False, reply_held=False
    ):
        self.gate = asyncio.Event()
        self.done = threading.Event()
        self.fails = fails
        real = timekeeping.stamp_arrival

        async def gated(match_id, token=None):
            if reply_held:  # Redis makes the stamp at once; its reply waits at the gate
                made = await real(match_id, token)
                await self.gate.wait()
                self.done.set()
                return made
            await self.gate.wait()
            try:
                if self.fails is not None:
                    if reply_lost:  # Redis made the stamp; its reply never came back
                        await real(match_id, token)
                    raise self.fails
                return await real(match_id, token)
            finally:
                self.done.set()

        monkeypatch.setattr(timekeeping, "stamp_arrival", gated)


class ReadsSeen:
    """Each read of a match's row: (locked, the stamp got by then)."""

    def __init__(self, monkeypatch, stamp: GatedStamp):
        self.seen: list[tuple[bool, bool]] = []
        self.first = threading.Event()
        real = rows.read

        def read(match_id, *, lock):
            self.seen.append((lock, stamp.done.is_set()))
            self.first.set()
            return real(match_id, lock=lock)

        monkeypatch.setattr(rows, "read", read)


async def until(condition) -> None:
    async with asyncio.timeout(TIMEOUT_S):
        while not condition():
            await asyncio.sleep(0.005)


def receiving(match: Match, user, seat: int, content: dict, answers: list) -> asyncio.Future:
    async def answer(message: dict) -> None:
        answers.append(message)

    return asyncio.ensure_future(
        commands.receive(
            match_id=str(match.pk), user=user, seats=[seat], content=content, answer=answer
        )
    )


postgresql_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="only PostgreSQL reads a match without its lock"
)


@pytest.fixture(
    params=[1, pytest.param(2, marks=postgresql_only)], ids=["one thread", "two threads"]
)
def database_threads(request, settings):
    """The sockets' database threads: one (SQLite's, where a thread never waits for a stamp)
    or a pool (PostgreSQL's), whose connections are closed at the end (the test database is
    dropped after the last test)."""
    settings.DB_THREADS = request.param
    yield request.param
    if request.param > 1:
        meeting = threading.Barrier(request.param, timeout=TIMEOUT_S)

        def close() -> None:
            meeting.wait()  # one call on each thread of the pool
            connections.close_all()

        pool = database._pool(request.param)
        for closing in [pool.submit(close) for _ in range(request.param)]:
            closing.result()


@postgresql_only
@pytest.mark.parametrize("database_threads", [2], indirect=True)
async def test_the_match_is_read_while_its_arrival_is_stamped(monkeypatch, database_threads):
    match, users, starter = await dealt_match()
    stamp = GatedStamp(monkeypatch)
    reads = ReadsSeen(monkeypatch, stamp)
    answers: list[dict] = []
    received = receiving(match, users[starter], starter, {"type": "start", "cseq": 1}, answers)
    await until(reads.first.is_set)
    assert reads.seen == [(False, False)]  # read, not locked, and the stamp not got yet
    assert answers == [] and await seq_of(match) == match.seq
    stamp.gate.set()
    await asyncio.wait_for(received, TIMEOUT_S)
    assert [(a["type"], a["seq"]) for a in answers] == [("ack", match.seq + 1)]
    assert reads.seen == [(False, False)]
    assert not sync_redis().exists(timekeeping.ARRIVALS_KEY.format(match_id=match.pk))


async def test_no_row_is_locked_before_the_arrival_is_stamped(monkeypatch, database_threads):
    """A refusal is judged again under the lock on PostgreSQL, and every command takes the
    lock on SQLite: either way only once the arrival is known."""
    match, users, starter = await dealt_match()
    stamp = GatedStamp(monkeypatch)
    reads = ReadsSeen(monkeypatch, stamp)
    answers: list[dict] = []
    other = 1 - starter  # not the one to press Start: refused
    received = receiving(match, users[other], other, {"type": "start", "cseq": 1}, answers)
    if database_threads > 1:  # the read is made while the stamp waits
        await until(reads.first.is_set)
    stamp.gate.set()
    await asyncio.wait_for(received, TIMEOUT_S)
    assert [a["type"] for a in answers] == ["error"]
    assert [got for locked, got in reads.seen if locked] == [True]
    assert await seq_of(match) == match.seq


async def test_a_stamp_made_whose_reply_was_lost_is_not_left_pending(monkeypatch):
    """Left pending, it would hold back every forfeit of the match for a minute."""
    match, users, decider, move = await started_match()
    stamp = GatedStamp(monkeypatch, fails=RedisTimeoutError("no reply"), reply_lost=True)
    stamp.gate.set()
    answers: list[dict] = []
    await asyncio.wait_for(
        receiving(match, users[decider], decider, {**move, "cseq": 1}, answers), TIMEOUT_S
    )
    assert [(a["type"], a["code"]) for a in answers] == [("error", "time_unavailable")]
    pending = timekeeping.ARRIVALS_KEY.format(match_id=match.pk)
    await until(lambda: sync_redis().zcard(pending) == 0)


async def test_a_stamp_whose_socket_closed_before_its_reply_is_not_left_pending(
    monkeypatch, database_threads
):
    """A player about to lose on time must not buy a minute by sending anything and closing
    the tab before the stamp's reply: left pending, the stamp would hold back the forfeit."""
    match, users, decider, move = await started_match()
    stamp = GatedStamp(monkeypatch, reply_held=True)
    received = receiving(match, users[decider], decider, {**move, "cseq": 1}, [])
    pending = timekeeping.ARRIVALS_KEY.format(match_id=match.pk)
    await until(lambda: sync_redis().zcard(pending) == 1)  # made, its reply not in yet
    received.cancel()  # the socket closed
    with pytest.raises(asyncio.CancelledError):
        await received
    stamp.gate.set()
    await until(stamp.done.is_set)
    await until(lambda: sync_redis().zcard(pending) == 0)
    assert await seq_of(match) == match.seq  # and the command was not applied


@postgresql_only
@pytest.mark.parametrize("database_threads", [2], indirect=True)
async def test_a_command_whose_time_was_taken_before_its_socket_closed_keeps_its_stamp_until_made(
    monkeypatch, database_threads
):
    """The database thread had read the match and taken the stamp's time when the socket
    closed: the command is made as any other, and its stamp stays pending until it is, so
    no forfeit slips in between on the grounds that nothing was sent in time."""
    match, users, decider, move = await started_match()
    took, go = threading.Event(), threading.Event()
    real_settled, real_release = timekeeping.settled_ms, timekeeping.release_later

    def settled(arrival_ms):
        at_ms = real_settled(arrival_ms)
        took.set()
        go.wait(TIMEOUT_S)
        return at_ms

    releases: list[tuple] = []

    def release_later(*args):
        releases.append(args)
        real_release(*args)

    monkeypatch.setattr(timekeeping, "settled_ms", settled)
    monkeypatch.setattr(timekeeping, "release_later", release_later)
    received = receiving(match, users[decider], decider, {**move, "cseq": 1}, [])
    await until(took.is_set)
    received.cancel()  # the socket closed
    with pytest.raises(asyncio.CancelledError):
        await received
    for _ in range(3):  # a turn of the loop for whatever the cancellation scheduled
        await asyncio.sleep(0)
    pending = timekeeping.ARRIVALS_KEY.format(match_id=match.pk)
    assert releases == [] and sync_redis().zcard(pending) == 1
    go.set()
    await until(lambda: len(releases) == 1)  # once the thread is done
    assert await seq_of(match) == match.seq + 1
    assert sync_redis().zcard(pending) == 0


@pytest.mark.parametrize(
    ("failure", "code", "reported"),
    [
        (RedisConnectionError("Redis went away"), "time_unavailable", True),
        (PoolBusy("no connection free"), "busy", False),
    ],
)
async def test_a_stamp_that_fails_after_the_read_applies_nothing_and_leaves_nothing_waiting(
    monkeypatch, database_threads, failure, code, reported
):
    match, users, decider, move = await started_match()
    stamp = GatedStamp(monkeypatch, fails=failure)
    reads = ReadsSeen(monkeypatch, stamp)
    answers: list[dict] = []
    received = receiving(match, users[decider], decider, {**move, "cseq": 1}, answers)
    if database_threads > 1:
        await until(reads.first.is_set)
    stamp.gate.set()
    await asyncio.wait_for(received, TIMEOUT_S)
    assert [(a["type"], a["code"], a["cseq"]) for a in answers] == [("error", code, 1)]
    assert await seq_of(match) == match.seq
    faults = database_sync_to_async(
        lambda: TimingFault.objects.filter(match=match, kind=TimingFault.Kind.UNREACHABLE).count()
    )
    assert await faults() == (1 if reported else 0)
    # No database thread is left waiting for that stamp: the command sent again is applied.
    stamp.fails = None
    answers.clear()
    again = receiving(match, users[decider], decider, {**move, "cseq": 1}, answers)
    await asyncio.wait_for(again, TIMEOUT_S)
    assert [(a["type"], a["seq"]) for a in answers] == [("ack", match.seq + 1)]
